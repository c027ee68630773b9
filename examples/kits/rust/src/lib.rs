//! conform-kit: what every Rust target of conform needs besides its assembler.
//!
//! - [`serve`] runs conform's line protocol (docs/protocol.md) on stdin and stdout: one request
//!   at a time, each reply flushed; `data` is read raw, so a payload holding a lone surrogate
//!   escape (which serde_json refuses in a `String`) is answered with a `protocol` error instead
//!   of failing the request line; a panic is a `crash` reply, not a dead program. It speaks
//!   version 2 when `hello` offers it: payloads framed after their request line (read as bytes,
//!   no JSON string to unescape) and cases planned ahead (what comes after the reply that ends a
//!   case is answered `skipped`). serde_json writes a NaN or an infinity as `null`, so a reply
//!   never holds one to mark as `{"$number": "NaN"}`: such a value shows as `got null`.
//! - The validated llama-server glue ([`read_timings`], [`read_progress`], [`ReasoningState`]):
//!   the fields no OpenAI client keeps, checked as docs/spec.md says, for a program that wraps an
//!   existing client.
//!
//! A maintainer implements [`Target`] with calls into their assembler:
//!
//! ```ignore
//! impl conform_kit::Target for MyTarget {
//!     type Event = Event;
//!     type Completion = Completion;
//!     type Error = MyError; // implements conform_kit::KindedError
//!     fn push(&mut self, data: &str) -> Result<Vec<Event>, MyError> { self.0.push(data) }
//!     fn finish(self, capped: bool) -> Result<Completion, MyError> { self.0.finish(capped) }
//!     fn state(&self) -> conform_kit::State { /* the four readers */ }
//! }
//! conform_kit::serve(conform_kit::Hello::new("my-asm", "1.0", "rust"), MyTarget::new);
//! ```

use std::io::{self, BufRead, Read, Write};
use std::panic::{self, AssertUnwindSafe};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

/// The highest version of the line protocol the kit speaks: 2 when `hello` offers it in
/// `accept`, else 1.
pub const PROTOCOL: u64 = 2;

/// An assembler's error: `kind()` is `protocol`, `stream_closed_early` or `server`.
pub trait KindedError {
    fn kind(&self) -> &str;
    fn message(&self) -> String;
}

/// The kit's own error (the glue returns it), with one of the three kinds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamError {
    pub kind: &'static str,
    pub message: String,
}

impl StreamError {
    pub fn protocol(message: impl Into<String>) -> Self {
        StreamError { kind: "protocol", message: message.into() }
    }
}

impl KindedError for StreamError {
    fn kind(&self) -> &str {
        self.kind
    }
    fn message(&self) -> String {
        self.message.clone()
    }
}

/// The four readers after a push, as the protocol's `state` object.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct State {
    pub id: Option<String>,
    pub reasoning_tokens: u64,
    pub in_reasoning: bool,
    pub is_finished: bool,
}

/// One case's assembler, as the loop calls it.
pub trait Target {
    type Event: Serialize;
    type Completion: Serialize;
    type Error: KindedError;
    fn push(&mut self, data: &str) -> Result<Vec<Self::Event>, Self::Error>;
    fn finish(self, thinking_capped: bool) -> Result<Self::Completion, Self::Error>;
    fn state(&self) -> State;
}

/// The program's name, version and language, as `hello` answers them.
#[derive(Debug, Clone)]
pub struct Hello {
    pub name: String,
    pub version: String,
    pub language: String,
}

impl Hello {
    pub fn new(name: &str, version: &str, language: &str) -> Self {
        Hello { name: name.into(), version: version.into(), language: language.into() }
    }
}

#[derive(Deserialize)]
struct Request<'a> {
    seq: u64,
    op: String,
    protocol: Option<u64>,
    /// The versions the harness speaks (a list).
    accept: Option<Value>,
    #[serde(borrow)]
    data: Option<&'a RawValue>,
    /// Protocol 2: the payload's length in bytes; the payload and a LF follow the line.
    bytes: Option<u64>,
    thinking_capped: Option<bool>,
}

fn error_reply(seq: Option<u64>, kind: &str, message: impl Into<String>) -> Value {
    json!({"seq": seq, "error": {"kind": kind, "message": message.into()}})
}

fn kinded_reply(seq: u64, error: &impl KindedError) -> Value {
    match error.kind() {
        kind @ ("protocol" | "stream_closed_early" | "server") => {
            error_reply(Some(seq), kind, error.message())
        }
        other => error_reply(Some(seq), "crash", format!("unknown error kind {other:?}")),
    }
}

fn seq_of(line: &str) -> Option<u64> {
    serde_json::from_str::<Value>(line).ok().and_then(|v| v.get("seq").and_then(Value::as_u64))
}

/// Answers requests one at a time; [`serve`] runs one over stdin and stdout.
pub struct Session<T, F> {
    hello: Hello,
    create: F,
    target: Option<T>,
    /// The version agreed in `hello`.
    protocol: u64,
    /// The case had its error or its finish: protocol 2 skips what was planned after it.
    ended: bool,
}

impl<T: Target, F: FnMut() -> T> Session<T, F> {
    pub fn new(hello: Hello, create: F) -> Self {
        Session { hello, create, target: None, protocol: 1, ended: false }
    }

    /// The reply to one request line, and whether the program should exit after it. `frames`
    /// holds what follows the line: in protocol 2, a push's payload may come there.
    pub fn answer(&mut self, line: &str, frames: &mut impl Read) -> (Value, bool) {
        let request: Request = match serde_json::from_str(line) {
            Ok(request) => request,
            Err(e) => return (error_reply(seq_of(line), "bad_request", e.to_string()), false),
        };
        let seq = request.seq;
        let bad = |message: &str| (error_reply(Some(seq), "bad_request", message), false);
        // Read before anything else is checked: the next request starts after it.
        let framed = match request.bytes.filter(|_| request.op == "push") {
            None => None,
            Some(size) => match self.frame(size, frames) {
                Ok(payload) => Some(payload),
                Err(problem) => return bad(&problem),
            },
        };
        let skipped = (json!({"seq": seq, "skipped": true}), false);
        match request.op.as_str() {
            "hello" => {
                let asked = request.protocol.filter(|v| *v == 1 || *v == PROTOCOL);
                let Some(asked) = asked else {
                    return bad("only protocols 1 and 2 are spoken here");
                };
                let offered = request.accept.as_ref().and_then(Value::as_array);
                let offered = offered.is_some_and(|a| a.contains(&json!(PROTOCOL)));
                self.protocol = if offered { PROTOCOL } else { asked };
                let h = &self.hello;
                let reply = json!({"seq": seq, "name": h.name, "version": h.version,
                                   "language": h.language, "protocol": self.protocol});
                (reply, false)
            }
            "new" => {
                self.target = Some((self.create)());
                self.ended = false;
                (json!({"seq": seq, "ok": true}), false)
            }
            "push" => {
                let data = match framed {
                    Some(payload) => Ok(payload),
                    None => {
                        let Some(raw) = request.data.filter(|raw| raw.get().starts_with('"'))
                        else {
                            return bad("\"push\" needs a string \"data\"");
                        };
                        // The request line is valid JSON, so a string serde_json cannot decode
                        // holds a lone surrogate escape: that payload is a protocol error
                        // (docs/protocol.md).
                        serde_json::from_str::<String>(raw.get())
                            .map_err(|e| StreamError::protocol(format!("unpaired surrogate: {e}")))
                    }
                };
                if self.ended && self.protocol >= 2 {
                    return skipped;
                }
                let Some(target) = self.target.as_mut() else {
                    return bad("no case is open: send \"new\" first");
                };
                let reply = match data {
                    Err(error) => Err(kinded_reply(seq, &error)),
                    Ok(data) => match target.push(&data) {
                        Ok(events) => {
                            Ok(json!({"seq": seq, "events": events, "state": target.state()}))
                        }
                        Err(error) => Err(kinded_reply(seq, &error)),
                    },
                };
                self.ended |= reply.is_err();
                (reply.unwrap_or_else(|error| error), false)
            }
            "finish" => {
                let Some(thinking_capped) = request.thinking_capped else {
                    return bad("\"finish\" needs a boolean \"thinking_capped\"");
                };
                if self.ended && self.protocol >= 2 {
                    return skipped;
                }
                let Some(target) = self.target.take() else {
                    return bad("no case is open: send \"new\" first");
                };
                self.ended = true;
                let reply = match target.finish(thinking_capped) {
                    Ok(completion) => json!({"seq": seq, "completion": completion}),
                    Err(error) => kinded_reply(seq, &error),
                };
                (reply, false)
            }
            "bye" => (json!({"seq": seq, "ok": true}), true),
            other => bad(&format!("unknown op {other:?}")),
        }
    }

    /// A framed payload: `size` bytes of UTF-8 and a LF (an `Err` is a bad request).
    fn frame(&self, size: u64, frames: &mut impl Read) -> Result<String, String> {
        if self.protocol < 2 {
            return Err("\"bytes\" is protocol 2, which was not agreed in \"hello\"".into());
        }
        let size = usize::try_from(size).map_err(|_| "\"bytes\" is too large".to_string())?;
        let mut payload = vec![0; size.checked_add(1).ok_or("\"bytes\" is too large")?];
        if frames.read_exact(&mut payload).is_err() || payload.pop() != Some(b'\n') {
            return Err(format!("the payload after the request line is not {size} bytes and a LF"));
        }
        String::from_utf8(payload).map_err(|e| format!("the framed payload is not UTF-8: {e}"))
    }
}

/// Runs the line protocol on stdin and stdout until `bye` or end of input.
pub fn serve<T: Target, F: FnMut() -> T>(hello: Hello, create: F) {
    // A panic is reported as a `crash` reply; keep its message off stdout.
    panic::set_hook(Box::new(|info| eprintln!("assembler panicked: {info}")));
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut input = io::BufReader::with_capacity(64 * 1024, io::stdin().lock());
    let mut session = Session::new(hello, create);
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let (reply, exit) = match std::str::from_utf8(&line) {
            Err(_) => (error_reply(None, "bad_request", "the request is not valid UTF-8"), false),
            Ok(text) => panic::catch_unwind(AssertUnwindSafe(|| session.answer(text, &mut input)))
                .unwrap_or_else(|_| {
                    session.target = None; // the case is over
                    session.ended = true;
                    (error_reply(seq_of(text), "crash", "the assembler panicked"), false)
                }),
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

// ---------------------------------------------------------------------------------------------
// The validated llama-server glue

/// 2^53-1: an integer field beyond it is a protocol error (contract I2).
pub const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The eleven timings fields, in the golden files' order.
pub const TIMINGS_FIELDS: [&str; 11] = [
    "cache_n",
    "prompt_n",
    "prompt_ms",
    "prompt_per_token_ms",
    "prompt_per_second",
    "predicted_n",
    "predicted_ms",
    "predicted_per_token_ms",
    "predicted_per_second",
    "draft_n",
    "draft_n_accepted",
];

/// The eleven timings fields, each a number or null.
pub type Timings = Map<String, Value>;

/// The progress event.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Progress {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub total: Option<i64>,
    pub cache: Option<i64>,
    pub processed: Option<i64>,
    pub time_ms: Option<i64>,
}

/// A number field: a finite number, or None when absent or null.
pub fn read_number(value: Option<&Value>, at: &str) -> Result<Option<f64>, StreamError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(f) if f.is_finite() => Ok(Some(f)),
            _ => Err(StreamError::protocol(format!("{at} is out of range"))),
        },
        Some(_) => Err(StreamError::protocol(format!("{at} must be a number"))),
    }
}

/// An integer field: integral (`1.0` is 1: contract I1) and within ±(2^53-1) (I2).
pub fn read_integer(value: Option<&Value>, at: &str) -> Result<Option<i64>, StreamError> {
    if let Some(Value::Number(n)) = value {
        if let Some(i) = n.as_i64() {
            return if (i as f64).abs() <= MAX_SAFE_INTEGER {
                Ok(Some(i))
            } else {
                Err(StreamError::protocol(format!("{at} is out of range")))
            };
        }
    }
    match read_number(value, at)? {
        None => Ok(None),
        Some(f) if f.fract() != 0.0 => {
            Err(StreamError::protocol(format!("{at} must be an integer")))
        }
        // Beyond 2^53-1 the parser has already rounded: no exact integer is left to read.
        Some(f) if f.abs() > MAX_SAFE_INTEGER => {
            Err(StreamError::protocol(format!("{at} is out of range")))
        }
        Some(f) => Ok(Some(f as i64)),
    }
}

/// A chunk's `timings`: all eleven fields (null where the server left one out), or None.
pub fn read_timings(value: Option<&Value>) -> Result<Option<Timings>, StreamError> {
    let object = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(object)) => object,
        Some(_) => return Err(StreamError::protocol("timings must be an object")),
    };
    let mut timings = Timings::new();
    for name in TIMINGS_FIELDS {
        let number = read_number(object.get(name), &format!("timings.{name}"))?;
        let number = number.and_then(serde_json::Number::from_f64).map(Value::Number);
        // Integers stay integers: serde_json writes 3.0 as 3.0, and conform compares by value.
        let value = match object.get(name) {
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Value::Number(n.clone()),
            _ => number.unwrap_or(Value::Null),
        };
        timings.insert(name.to_string(), value);
    }
    Ok(Some(timings))
}

/// A chunk's `prompt_progress` as the progress event, or None.
pub fn read_progress(value: Option<&Value>) -> Result<Option<Progress>, StreamError> {
    let object = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(object)) => object,
        Some(_) => return Err(StreamError::protocol("prompt_progress must be an object")),
    };
    let field = |name: &str| read_integer(object.get(name), &format!("prompt_progress.{name}"));
    Ok(Some(Progress {
        kind: "progress",
        total: field("total")?,
        cache: field("cache")?,
        processed: field("processed")?,
        time_ms: field("time_ms")?,
    }))
}

/// Timings, `reasoning_tokens` and `in_reasoning` (contract R3, R4), from the events in order.
#[derive(Debug, Clone, Default)]
pub struct ReasoningState {
    pub timings: Option<Timings>,
    pub reasoning_tokens: u64,
    pub in_reasoning: bool,
}

impl ReasoningState {
    /// R4: a chunk's timings are taken before any of its text.
    pub fn take_timings(&mut self, timings: Option<Timings>) {
        if timings.is_some() {
            self.timings = timings;
        }
    }

    /// Updates the state for one event, by its type (`reasoning`, `content`, `tool_call_delta`).
    pub fn saw(&mut self, event_type: &str) -> Result<(), StreamError> {
        match event_type {
            "reasoning" => {
                self.in_reasoning = true;
                let predicted = self.timings.as_ref().and_then(|t| t.get("predicted_n"));
                if let Some(n) = read_integer(predicted, "timings.predicted_n")? {
                    if n < 0 {
                        return Err(StreamError::protocol(
                            "timings.predicted_n must be a non-negative integer",
                        ));
                    }
                    self.reasoning_tokens = n as u64;
                }
            }
            "content" | "tool_call_delta" => self.in_reasoning = false,
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo(Vec<String>);

    impl Target for Echo {
        type Event = Value;
        type Completion = Value;
        type Error = StreamError;
        fn push(&mut self, data: &str) -> Result<Vec<Value>, StreamError> {
            match data {
                "boom" => Err(StreamError { kind: "server", message: "boom".into() }),
                "" => Ok(vec![]),
                _ => {
                    self.0.push(data.into());
                    Ok(vec![json!({"type": "content", "text": data})])
                }
            }
        }
        fn finish(self, _: bool) -> Result<Value, StreamError> {
            Ok(json!({"content": self.0.concat()}))
        }
        fn state(&self) -> State {
            State::default()
        }
    }

    /// One request line (with what follows it: a framed payload) to `session`.
    fn ask<F: FnMut() -> Echo>(session: &mut Session<Echo, F>, requests: &str) -> (Value, bool) {
        let (line, rest) = requests.split_once('\n').unwrap_or((requests, ""));
        session.answer(line, &mut rest.as_bytes())
    }

    /// A protocol-2 push of `payload` after its request line.
    fn framed(seq: u64, payload: &str) -> String {
        format!("{{\"seq\":{seq},\"op\":\"push\",\"bytes\":{}}}\n{payload}\n", payload.len())
    }

    #[test]
    fn session_answers_each_request() {
        let mut s = Session::new(Hello::new("echo", "1", "rust"), || Echo(vec![]));
        assert_eq!(ask(&mut s, r#"{"seq":1,"op":"hello","protocol":1}"#).0["name"], "echo");
        assert_eq!(
            ask(&mut s, r#"{"seq":2,"op":"push","data":"x"}"#).0["error"]["kind"],
            "bad_request"
        );
        assert_eq!(ask(&mut s, r#"{"seq":3,"op":"new"}"#).0["ok"], true);
        assert_eq!(
            ask(&mut s, r#"{"seq":4,"op":"push","data":"Hi"}"#).0["events"][0]["text"],
            "Hi"
        );
        assert_eq!(ask(&mut s, r#"{"seq":5,"op":"push","data":""}"#).0["events"], json!([]));
        let lone = ask(&mut s, r#"{"seq":6,"op":"push","data":"{\"x\":\"\ud800\"}"}"#).0;
        assert_eq!(lone["error"]["kind"], "protocol");
        assert_eq!(
            ask(&mut s, r#"{"seq":7,"op":"push","data":"boom"}"#).0["error"]["kind"],
            "server"
        );
        let done = ask(&mut s, r#"{"seq":8,"op":"finish","thinking_capped":false}"#).0;
        assert_eq!(done["completion"]["content"], "Hi");
        assert_eq!(ask(&mut s, "not json").0["error"]["kind"], "bad_request");
        assert!(ask(&mut s, r#"{"seq":9,"op":"bye"}"#).1);
    }

    #[test]
    fn version_1_plans_nothing() {
        let mut s = Session::new(Hello::new("echo", "1", "rust"), || Echo(vec![]));
        assert_eq!(ask(&mut s, r#"{"seq":1,"op":"hello","protocol":1}"#).0["protocol"], 1);
        ask(&mut s, r#"{"seq":2,"op":"new"}"#);
        assert_eq!(
            ask(&mut s, r#"{"seq":3,"op":"push","data":"boom"}"#).0["error"]["kind"],
            "server"
        );
        // Every request reaches the assembler, as it always did.
        assert_eq!(ask(&mut s, r#"{"seq":4,"op":"push","data":"x"}"#).0["events"][0]["text"], "x");
        let done = ask(&mut s, r#"{"seq":5,"op":"finish","thinking_capped":false}"#).0;
        assert_eq!(done["completion"]["content"], "x");
        assert_eq!(ask(&mut s, &framed(6, "y")).0["error"]["kind"], "bad_request");
        let three = ask(&mut s, r#"{"seq":7,"op":"hello","protocol":3}"#).0;
        assert_eq!(three["error"]["kind"], "bad_request");
    }

    #[test]
    fn version_2_reads_frames_and_skips_after_the_end_of_a_case() {
        let mut s = Session::new(Hello::new("echo", "1", "rust"), || Echo(vec![]));
        let hello = r#"{"seq":1,"op":"hello","protocol":1,"accept":[1,2,3,4],"shared":"/x"}"#;
        assert_eq!(ask(&mut s, hello).0["protocol"], 2);
        ask(&mut s, r#"{"seq":2,"op":"new"}"#);
        // A LF, a quote and a backslash inside: framed, not escaped.
        let text = "H\u{e9}\n\"\\";
        assert_eq!(ask(&mut s, &framed(3, text)).0["events"][0]["text"], text);
        assert_eq!(ask(&mut s, &framed(4, "")).0["events"], json!([]));
        // A lone surrogate still comes as "data".
        let lone = ask(&mut s, r#"{"seq":5,"op":"push","data":"{\"x\":\"\ud800\"}"}"#).0;
        assert_eq!(lone["error"]["kind"], "protocol");
        let skipped = |seq: u64| json!({"seq": seq, "skipped": true});
        assert_eq!(ask(&mut s, &framed(6, "Hi")).0, skipped(6));
        assert_eq!(ask(&mut s, r#"{"seq":7,"op":"finish","thinking_capped":false}"#).0, skipped(7));
        ask(&mut s, r#"{"seq":8,"op":"new"}"#);
        assert_eq!(ask(&mut s, &framed(9, "a")).0["events"][0]["text"], "a");
        assert_eq!(ask(&mut s, r#"{"seq":10,"op":"push","data":"b"}"#).0["events"][0]["text"], "b");
        let done = ask(&mut s, r#"{"seq":11,"op":"finish","thinking_capped":false}"#).0;
        assert_eq!(done["completion"]["content"], "ab");
        assert_eq!(ask(&mut s, &framed(12, "c")).0, skipped(12));
        assert_eq!(
            ask(&mut s, r#"{"seq":13,"op":"finish","thinking_capped":true}"#).0,
            skipped(13)
        );
        ask(&mut s, r#"{"seq":14,"op":"new"}"#);
        assert_eq!(ask(&mut s, &framed(15, "boom")).0["error"]["kind"], "server");
        assert_eq!(ask(&mut s, &framed(16, "d")).0, skipped(16));
        // A frame shorter than it says, or not UTF-8, is a bad request.
        let short = ask(&mut s, "{\"seq\":17,\"op\":\"push\",\"bytes\":9}\nabc\n").0;
        assert_eq!(short["error"]["kind"], "bad_request");
        let mut bytes = b"\xff\n".as_slice();
        let latin = s.answer(r#"{"seq":18,"op":"push","bytes":1}"#, &mut bytes).0;
        assert_eq!(latin["error"]["kind"], "bad_request");
    }

    #[test]
    fn the_glue_range_checks_integers() {
        let v = |text: &str| serde_json::from_str::<Value>(text).unwrap();
        for (text, ok) in [
            ("3", true),
            ("3.0", true),
            ("9007199254740991", true),
            ("9007199254740992", false),
            ("9007199254740993.0", false),
            ("1e300", false),
            ("1.5", false),
        ] {
            assert_eq!(read_integer(Some(&v(text)), "x").is_ok(), ok, "{text}");
        }
        let timings = read_timings(Some(&v(r#"{"predicted_n": 1e300}"#))).unwrap().unwrap();
        assert_eq!(timings.len(), 11);
        assert_eq!(timings["draft_n"], Value::Null);
        let mut state = ReasoningState::default();
        state.take_timings(Some(timings));
        assert!(state.saw("reasoning").is_err(), "predicted_n 1e300 is no reasoning_tokens");
        let progress = read_progress(Some(&v(r#"{"total": 36.0}"#))).unwrap().unwrap();
        assert_eq!(progress.total, Some(36));
        assert!(read_progress(Some(&v("\"x\""))).is_err());
    }
}
