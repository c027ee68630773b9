"""The Rust example (examples/rust/) is gated like any other program: built offline against the
serde crates Debian installs, it passes every case (and a sample in every mode:
tests/integration/every_mode.py) but the implementation-defined outcomes its expected-failures
file lists, its replies follow the protocol's schemas, and each
serde pitfall it keeps (behind CONFORM_RUST_PITFALL, or a cargo feature) fails the case that pins
it.

Without cargo or the Debian crates the tests skip; with CI=true they fail instead, so a CI
image that lost them cannot pass unnoticed."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.check.modes import PLAIN
from harness.suite.cases import Suite
from reference.choices import OUTCOMES
from tests.conftest import conform
from tests.integration.builds import cached_build, source_key, tool_version
from tests.integration.every_mode import NOT_PLAIN, EveryMode, run_every_mode
from tests.integration.versions import check_protocol_1

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "rust"
KIT = ROOT / "examples" / "kits" / "rust"  # the path dependency that holds its loop
XFAIL = EXAMPLE / "conform.xfail"
#: `--rule` for every implementation-defined point: the cases where --strict can change a verdict.
POINTED = tuple(arg for point in OUTCOMES for arg in ("--rule", point))
BINARY = "conform-rust-example"
# The crates the build reads from the source replacement in examples/rust/.cargo/config.toml.
REGISTRY = Path("/usr/share/cargo/registry")
CRATES = ("serde", "serde_derive", "serde_json")
# Outside the worktree, so that repeated runs (and other checkouts) reuse the compiled crates.
# One folder per checkout: cargo decides freshness per source path, so two checkouts sharing one
# target folder would each copy out whichever binary the other linked last.
TARGET_DIR = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "conform"
    / "rust-target"
    / hashlib.sha256(str(EXAMPLE).encode()).hexdigest()[:12]
)


def find_cargo() -> str | None:
    found = shutil.which("cargo")
    if found is None and (Path.home() / ".cargo" / "bin" / "cargo").is_file():
        found = str(Path.home() / ".cargo" / "bin" / "cargo")
    return found


def missing_toolchain() -> str | None:
    if find_cargo() is None:
        return "cargo is not on PATH nor in ~/.cargo/bin"
    absent = [c for c in CRATES if not any(REGISTRY.glob(f"{c}-1.*"))]
    if absent:
        crates = ", ".join(absent)
        return f"Debian's crates {crates} are not in {REGISTRY} (examples/rust/README.md)"
    return None


def toolchain(cargo: str) -> list[str]:
    """What a build reads besides its sources, as part of its cache key: the versions of cargo and
    rustc, and the Debian crates' folder names (their versions)."""
    crates = sorted(p.name for c in CRATES for p in REGISTRY.glob(f"{c}-1.*"))
    rustc = str(Path(cargo).with_name("rustc"))
    return [tool_version(cargo, "--version"), tool_version(rustc, "--version"), *crates]


def build(*cargo_args: str) -> Path:
    """The example's binary, built offline (release) with `cargo_args`, from the build cache
    (tests/integration/builds.py): cargo runs only when the sources, toolchain, crates or
    arguments changed. Each set of arguments has a cargo target folder of its own, so that
    switching features does not rebuild the crates."""
    cargo = find_cargo()
    assert cargo is not None
    key = source_key(EXAMPLE, source_key(KIT), *toolchain(cargo), *cargo_args)

    def make(dest: Path) -> None:
        target = TARGET_DIR / ("-".join(a.strip("-") for a in cargo_args) or "default")
        env = {**os.environ, "CARGO_TARGET_DIR": str(target)}
        command = [cargo, "build", "--offline", "--release", "--quiet", *cargo_args]
        done = subprocess.run(
            command, cwd=EXAMPLE, env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, f"{shlex.join(command)} failed:\n{done.stderr}"
        shutil.copy2(target / "release" / BINARY, dest)

    return cached_build(BINARY + "".join(cargo_args), key, make)


@pytest.fixture(scope="session")
def built() -> Path:
    """The example's binary, as built by default."""
    reason = missing_toolchain()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true, and the Rust example cannot be built: {reason}")
        pytest.skip(reason)
    return build()


@pytest.fixture(scope="session")
def binary(built: Path) -> str:
    return str(built)


def passes_every_case(binary: str, mode: str, *extra: str) -> None:
    code, output = conform("run", "--exec", shlex.quote(binary), "--mode", mode, *extra)
    assert code == 0, output
    assert "crashed" not in output and "timed-out" not in output, output


@pytest.fixture(scope="module")
def every_mode(binary: str, tmp_path_factory: pytest.TempPathFactory) -> EveryMode:
    return run_every_mode(shlex.quote(binary), tmp_path_factory.mktemp("rust") / "report.json")


# Plain runs in test_the_example_follows_the_protocol_schemas, which checks the replies as well.
@pytest.mark.parametrize("mode", NOT_PLAIN)
def test_the_example_passes_in_each_mode(every_mode: EveryMode, mode: str) -> None:
    every_mode.check_passes(mode)


def test_strict_fails_it_only_where_it_takes_another_allowed_outcome(binary: str) -> None:
    # --strict requires the reference's own outcome at I1..I9; serde takes others (the list in
    # examples/rust/conform.xfail, the example's --strict baseline, checked in every mode).
    code, output = conform("run", "--exec", shlex.quote(binary), "--mode", "plain", "--strict")
    assert code == 1
    failing = {line.split()[1] for line in output.splitlines() if line.startswith("FAIL ")}
    pins = {case.case_id: case.pins for case in Suite(ROOT).cases()}
    assert failing and all(any(pin.startswith("I") for pin in pins[c]) for c in failing), output
    # The baseline in every mode, on the cases that pin a point: --strict changes the gate only
    # there.
    strict = ("--strict", "--xfail", str(XFAIL), *POINTED)
    code, output = conform("run", "--exec", shlex.quote(binary), *strict)
    assert code == 0, output


def test_the_example_follows_the_protocol_schemas(binary: str) -> None:
    passes_every_case(binary, PLAIN, "--validate-protocol")


def test_it_answers_conforms_hello_with_protocol_1(binary: str) -> None:
    # What conform sends (the runs above are protocol 1 runs), spoken to it directly.
    check_protocol_1([binary])


# Each pitfall, and the cases of the suite that catch it (the rust-named ones were written for it).
PITFALLS = {
    # (`choices: null` refused is I5's other outcome since contract v4: r7_choices_null passes.)
    "default_vs_null": ["synthetic/r1_tool_calls_empty_or_null"],
    "u64_counts": [
        "synthetic/r9_rust_u64_counts",
        "synthetic/r3_timings_fraction_predicted_n_without_reasoning",
        "synthetic/r6_predicted_n_negative_then_reasoning",
    ],
    "struct_from_array": ["synthetic/r8_rust_struct_from_array", "synthetic/r6_progress_list"],
    "surrogate_in_ignored": ["synthetic/r6_surrogate_low_in_unknown"],
    "index_try_from": ["synthetic/r8_shape_error_beside_error_object"],
    "minus_zero": [
        "synthetic/r6_pitfall_minus_zero_index",
        "synthetic/r9_pitfall_minus_zero_counts",
    ],
    "enum_from_map": ["synthetic/type_confusion/choice_finish_reason_as_one_key_map"],
}


def failing_cases(command: str, cases: list[str]) -> tuple[set[str], str]:
    code, output = conform(
        "run", "--exec", command, "--mode", "plain", *[a for c in cases for a in ("-k", c)]
    )
    assert code in (0, 1), output
    failed = {line.split()[1] for line in output.splitlines() if line.startswith("FAIL ")}
    return failed, output


@pytest.mark.parametrize("pitfall", sorted(PITFALLS))
def test_the_suite_catches_each_pitfall(binary: str, pitfall: str) -> None:
    cases = PITFALLS[pitfall]
    failed, output = failing_cases(
        shlex.join(["env", f"CONFORM_RUST_PITFALL={pitfall}", binary]), cases
    )
    assert failed == set(cases), output
    failed, output = failing_cases(shlex.quote(binary), cases)
    assert failed == set(), output


def test_the_suite_catches_inexact_float_parsing(built: Path) -> None:
    # serde_json's `float_roundtrip` feature is on by default in the example; without it, floats
    # are parsed one ulp off.
    pitfall = build("--no-default-features")
    cases = ["synthetic/r9_rust_float_roundtrip", "llama-server/tool_call"]
    failed, output = failing_cases(shlex.quote(str(pitfall)), cases)
    assert failed == set(cases), output
    assert "expected 133.49649571698743, got 133.49649571698745" in output


def test_an_unknown_pitfall_name_stops_the_program(binary: str) -> None:
    command = shlex.join(["env", "CONFORM_RUST_PITFALL=no_such_pitfall", binary])
    code, output = conform(
        "run", "--exec", command, "--mode", "plain", "-k", "synthetic/r7_choices_null"
    )
    assert code == 2, output
    assert "unknown CONFORM_RUST_PITFALL" in output


#: A doc comment's code fence whose block rustdoc neither runs nor compiles.
_NOT_A_DOC_TEST = re.compile(r"^\s*//[/!]\s*```(ignore|text)\b")


def runnable_doc_tests(source: str) -> int:
    """How many code blocks in the doc comments of `source` are doc tests that `cargo test` would
    compile or run (every fence but ```ignore and ```text)."""
    fences = [line for line in source.splitlines() if re.match(r"^\s*//[/!]\s*```", line)]
    return sum(1 for opening in fences[::2] if not _NOT_A_DOC_TEST.match(opening))


def kit_tests(cargo: str) -> Path:
    """The kit's unit-test program (`cargo test --no-run`), from the build cache: cargo compiles
    it (serde and all, 10 s of CPU) only when the kit's sources, the toolchain or the crates
    changed, not once per checkout (a cargo target folder is one checkout's)."""

    def make(dest: Path) -> None:
        env = {**os.environ, "CARGO_TARGET_DIR": str(TARGET_DIR / "kit")}
        command = [cargo, "test", "--offline", "--no-run", "--message-format=json"]
        done = subprocess.run(
            command, cwd=KIT, env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, f"{shlex.join(command)} failed:\n{done.stderr}"
        programs = [
            message["executable"]
            for message in map(json.loads, done.stdout.splitlines())
            if message.get("reason") == "compiler-artifact"
            and message["profile"]["test"]
            and message.get("executable")
        ]
        assert len(programs) == 1, done.stdout  # the library's unit tests: the kit has no others
        shutil.copy2(programs[0], dest)

    return cached_build("conform-kit-tests", source_key(KIT, *toolchain(cargo)), make)


def test_the_adapter_kit_passes_its_own_tests(built: Path) -> None:
    # examples/kits/rust: the line-protocol loop and the llama-server glue the example is built
    # on (`built` first: it skips or fails as the toolchain says). Its unit tests are what
    # `cargo test` runs; its one doc example is ```ignore (a doc test, if one is added, runs too).
    cargo = find_cargo()
    assert cargo is not None
    done = subprocess.run(
        [str(kit_tests(cargo))], cwd=KIT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test result: ok. 4 passed" in done.stdout, done.stdout
    if runnable_doc_tests((KIT / "src" / "lib.rs").read_text()):
        env = {**os.environ, "CARGO_TARGET_DIR": str(TARGET_DIR / "kit")}
        command = [cargo, "test", "--offline", "--quiet", "--doc"]
        doc = subprocess.run(command, cwd=KIT, env=env, capture_output=True, text=True, check=False)
        assert doc.returncode == 0, doc.stdout + doc.stderr


def test_only_ignored_and_text_blocks_are_not_doc_tests() -> None:
    lines = ["//! ```ignore", "//! x", "//! ```", "/// ```", "/// y", "/// ```", "//! ```text"]
    assert runnable_doc_tests("\n".join(lines[:3])) == 0
    assert runnable_doc_tests("\n".join(lines)) == 1
    assert runnable_doc_tests("\n".join(["/// ```no_run", "/// z", "/// ```"])) == 1
