//! The serde pitfalls this example first fell into, each kept reachable so that a test can show
//! the suite catches it: `CONFORM_RUST_PITFALL=<name>` brings one back at run time. One more,
//! serde_json's inexact float parser, is a cargo feature instead: build with
//! `--no-default-features`.

use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pitfall {
    /// `#[serde(default)] Vec<T>`: a missing key is `[]`, but `null` fails (R7: null means absent).
    DefaultVsNull,
    /// `u64` for the timings counts and progress fields: a fraction or a negative number fails
    /// the whole payload, though R9 calls them numbers (timings) and integers (progress).
    U64Counts,
    /// Derived structs read from a JSON array too (`"error": ["boom"]` is a server error "boom").
    StructFromArray,
    /// serde_json skips ignored values without decoding their escapes: `"\udc00"` passes there.
    SurrogateInIgnored,
    /// The tool-call index read as `i64` and converted with `try_from` after the `error` object
    /// was looked at: a negative index next to one is a server error instead of a shape error.
    IndexTryFrom,
    /// serde_json parses the integer `-0` as the float -0.0: an integer field (a tool-call index,
    /// a progress field) refuses it, and a `predicted_n` of `-0` is no integer for R4.
    MinusZero,
    /// Derived enums read from a one-key map too (`"finish_reason": {"stop": null}` is `Stop`).
    EnumFromMap,
}

pub const NAMES: [(&str, Pitfall); 7] = [
    ("default_vs_null", Pitfall::DefaultVsNull),
    ("u64_counts", Pitfall::U64Counts),
    ("struct_from_array", Pitfall::StructFromArray),
    ("surrogate_in_ignored", Pitfall::SurrogateInIgnored),
    ("index_try_from", Pitfall::IndexTryFrom),
    ("minus_zero", Pitfall::MinusZero),
    ("enum_from_map", Pitfall::EnumFromMap),
];

static ACTIVE: OnceLock<Option<Pitfall>> = OnceLock::new();

/// Reads `CONFORM_RUST_PITFALL` once; an unknown name is an error, so a typo cannot pass unseen.
pub fn init_from_env() -> Result<(), String> {
    let active = match std::env::var("CONFORM_RUST_PITFALL") {
        Err(_) => None,
        Ok(name) if name.is_empty() => None,
        Ok(name) => match NAMES.iter().find(|(n, _)| *n == name) {
            Some((_, pitfall)) => Some(*pitfall),
            None => {
                let known: Vec<&str> = NAMES.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "unknown CONFORM_RUST_PITFALL {name:?}; known: {}",
                    known.join(", ")
                ));
            }
        },
    };
    ACTIVE
        .set(active)
        .map_err(|_| "pitfalls are already set".to_string())
}

/// Whether the program runs with this pitfall brought back.
pub fn active(pitfall: Pitfall) -> bool {
    ACTIVE.get().copied().flatten() == Some(pitfall)
}
