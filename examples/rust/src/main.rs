//! conform's line protocol (docs/protocol.md) around the assembler: one JSON request per line on
//! stdin, one JSON reply per line on stdout.

mod assembler;
mod pitfall;

use std::io::{self, BufRead, Write};
use std::panic::{self, AssertUnwindSafe};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use assembler::{Assembler, InferError};

#[derive(Deserialize)]
struct Request<'a> {
    seq: u64,
    op: String,
    protocol: Option<u64>,
    // Raw, so that a payload holding a lone surrogate escape reaches us (a `String` field would
    // make serde_json refuse the whole request line).
    #[serde(borrow)]
    data: Option<&'a RawValue>,
    thinking_capped: Option<bool>,
}

enum Outcome {
    Reply(Value),
    Exit(Value),
}

fn error_reply(seq: Option<u64>, kind: &str, message: impl Into<String>) -> Value {
    json!({"seq": seq, "error": {"kind": kind, "message": message.into()}})
}

fn infer_error_reply(seq: u64, error: &InferError) -> Value {
    error_reply(Some(seq), error.kind(), error.message())
}

fn state(seq: u64, events: Value, asm: &Assembler) -> Value {
    json!({
        "seq": seq,
        "events": events,
        "state": {
            "id": asm.id(),
            "reasoning_tokens": asm.reasoning_tokens(),
            "in_reasoning": asm.in_reasoning(),
            "is_finished": asm.is_finished(),
        },
    })
}

// The `seq` of a request too broken to read as a `Request`, when it has one.
fn seq_of(line: &str) -> Option<u64> {
    serde_json::from_str::<Value>(line)
        .ok()
        .and_then(|v| v.get("seq").and_then(Value::as_u64))
}

#[derive(Default)]
struct Session {
    assembler: Option<Assembler>,
}

impl Session {
    fn answer(&mut self, line: &str) -> Outcome {
        let request: Request = match serde_json::from_str(line) {
            Ok(request) => request,
            Err(e) => {
                return Outcome::Reply(error_reply(seq_of(line), "bad_request", e.to_string()))
            }
        };
        let seq = request.seq;
        let bad = |message: &str| Outcome::Reply(error_reply(Some(seq), "bad_request", message));
        match request.op.as_str() {
            "hello" => {
                if request.protocol != Some(1) {
                    return bad("only protocol 1 is spoken here");
                }
                Outcome::Reply(json!({
                    "seq": seq,
                    "name": "conform-rust-example",
                    "version": env!("CARGO_PKG_VERSION"),
                    "language": "rust",
                    "protocol": 1,
                }))
            }
            "new" => {
                self.assembler = Some(Assembler::new());
                Outcome::Reply(json!({"seq": seq, "ok": true}))
            }
            "push" => {
                let Some(raw) = request.data else {
                    return bad("\"push\" needs a string \"data\"");
                };
                if !raw.get().starts_with('"') {
                    return bad("\"push\" needs a string \"data\"");
                }
                let Some(asm) = self.assembler.as_mut() else {
                    return bad("no case is open: send \"new\" first");
                };
                // The request line is valid JSON, so a string serde_json cannot decode holds a
                // lone surrogate escape: that payload is a protocol error (docs/protocol.md).
                let data: String = match serde_json::from_str(raw.get()) {
                    Ok(data) => data,
                    Err(e) => {
                        let error = InferError::Protocol(format!("unpaired surrogate: {e}"));
                        return Outcome::Reply(infer_error_reply(seq, &error));
                    }
                };
                Outcome::Reply(match asm.push(&data) {
                    Ok(events) => state(seq, json!(events), asm),
                    Err(error) => infer_error_reply(seq, &error),
                })
            }
            "finish" => {
                let Some(thinking_capped) = request.thinking_capped else {
                    return bad("\"finish\" needs a boolean \"thinking_capped\"");
                };
                let Some(asm) = self.assembler.take() else {
                    return bad("no case is open: send \"new\" first");
                };
                Outcome::Reply(match asm.finish(thinking_capped) {
                    Ok(completion) => json!({"seq": seq, "completion": completion}),
                    Err(error) => infer_error_reply(seq, &error),
                })
            }
            "bye" => Outcome::Exit(json!({"seq": seq, "ok": true})),
            other => bad(&format!("unknown op {other:?}")),
        }
    }
}

fn main() {
    if let Err(message) = pitfall::init_from_env() {
        eprintln!("{message}");
        std::process::exit(2);
    }
    // A panic is reported as a `crash` reply, not a dead program; keep its message off stdout.
    panic::set_hook(Box::new(|info| eprintln!("assembler panicked: {info}")));
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut session = Session::default();
    for line in stdin.lock().split(b'\n') {
        let Ok(line) = line else { break };
        let outcome = match std::str::from_utf8(&line) {
            Err(_) => Outcome::Reply(error_reply(
                None,
                "bad_request",
                "the request is not valid UTF-8",
            )),
            Ok(text) => panic::catch_unwind(AssertUnwindSafe(|| session.answer(text)))
                .unwrap_or_else(|_| {
                    session = Session::default();
                    Outcome::Reply(error_reply(seq_of(text), "crash", "the assembler panicked"))
                }),
        };
        let (reply, exit) = match outcome {
            Outcome::Reply(reply) => (reply, false),
            Outcome::Exit(reply) => (reply, true),
        };
        // The harness closing the pipe is no reason for a panic.
        if serde_json::to_writer(&mut out, &reply).is_err()
            || out.write_all(b"\n").is_err()
            || out.flush().is_err()
        {
            break;
        }
        if exit {
            break;
        }
    }
}
