//! Folds the payloads of one streamed chat completion from llama-server into events and one
//! completion (conform's docs/spec.md, rules R1 to R9). No I/O: the input is one payload at a time.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Number;

use crate::pitfall::{self, Pitfall};

/// What `push` and `finish` fail with.
#[derive(Debug, Clone, PartialEq)]
pub enum InferError {
    /// The payload (or the stream as a whole) breaks the protocol.
    Protocol(String),
    /// The stream ended before a finish reason arrived.
    StreamClosedEarly,
    /// The server sent an error object; this is its message.
    Server(String),
}

impl InferError {
    pub fn kind(&self) -> &'static str {
        match self {
            InferError::Protocol(_) => "protocol",
            InferError::StreamClosedEarly => "stream_closed_early",
            InferError::Server(_) => "server",
        }
    }

    pub fn message(&self) -> String {
        match self {
            InferError::Protocol(message) | InferError::Server(message) => message.clone(),
            InferError::StreamClosedEarly => {
                "the stream ended before a finish_reason arrived".into()
            }
        }
    }
}

fn protocol(message: impl Into<String>) -> InferError {
    InferError::Protocol(message.into())
}

// ---------------------------------------------------------------------------------------------
// The chunk, as llama-server sends it. Unknown fields are ignored (no `deny_unknown_fields`).

#[derive(Debug, Deserialize)]
struct Chunk {
    id: Option<String>,
    // Fixed: `null` means absent (R7). The first version had `#[serde(default)] Vec<Choice>`,
    // and serde's `default` covers only a missing key: `"choices": null` failed the payload.
    #[serde(default, deserialize_with = "null_as_empty")]
    choices: Vec<Object<Choice>>,
    timings: Option<Object<Timings>>,
    prompt_progress: Option<Object<Progress>>,
    error: Option<Object<ServerError>>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    delta: Option<Object<Delta>>,
    #[serde(default, deserialize_with = "finish_reason")]
    finish_reason: Option<FinishReason>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    content: Option<String>,
    reasoning_content: Option<String>,
    // Fixed as `choices` is: `"tool_calls": null` is no tool calls.
    #[serde(default, deserialize_with = "null_as_empty")]
    tool_calls: Vec<Object<ToolCallPiece>>,
}

#[derive(Debug, Deserialize)]
struct ToolCallPiece {
    // Fixed: `usize`, so a negative index is a shape error found while parsing, before the
    // `error` object is looked at (R8). The first version read an `i64` and converted it with
    // `try_from` in `check`, after the error check: a negative index next to an error object
    // came out as a server error.
    #[serde(deserialize_with = "tool_index")]
    index: usize,
    id: Option<String>,
    function: Option<Object<Function>>,
}

#[derive(Debug, Deserialize)]
struct Function {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ServerError {
    message: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    Length,
}

/// llama-server's `timings`; every field may be absent.
///
/// Fixed: the counts are `Number`, not `u64`. R9 makes every timings field a number, and R4 asks
/// for a non-negative integer `predicted_n` only when reasoning text uses it; a `u64` field failed
/// the whole payload for `"predicted_n": 2.5` or `-1` even when nothing read it. `Number` also
/// writes integers back as integers.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Timings {
    #[serde(default, deserialize_with = "count")]
    pub cache_n: Option<Number>,
    #[serde(default, deserialize_with = "count")]
    pub prompt_n: Option<Number>,
    pub prompt_ms: Option<f64>,
    pub prompt_per_token_ms: Option<f64>,
    pub prompt_per_second: Option<f64>,
    #[serde(default, deserialize_with = "count")]
    pub predicted_n: Option<Number>,
    pub predicted_ms: Option<f64>,
    pub predicted_per_token_ms: Option<f64>,
    pub predicted_per_second: Option<f64>,
    #[serde(default, deserialize_with = "count")]
    pub draft_n: Option<Number>,
    #[serde(default, deserialize_with = "count")]
    pub draft_n_accepted: Option<Number>,
}

/// `prompt_progress`, and the progress event made from it.
///
/// Fixed: `i64`, not `u64`: R9 says integers, and a negative one is an integer.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Progress {
    #[serde(default, deserialize_with = "integer")]
    pub total: Option<i64>,
    #[serde(default, deserialize_with = "integer")]
    pub cache: Option<i64>,
    #[serde(default, deserialize_with = "integer")]
    pub processed: Option<i64>,
    #[serde(default, deserialize_with = "integer")]
    pub time_ms: Option<i64>,
}

// ---------------------------------------------------------------------------------------------
// Reading the shape exactly

/// A `T` read only from a JSON object.
///
/// Fixed: serde's derived `Deserialize` also reads a struct from an array of its fields in order,
/// so `"prompt_progress": [36, 24, 36, 39]` was progress and `"error": ["boom"]` a server error.
/// The shape (R6) wants objects; `deserialize_map` refuses anything else.
#[derive(Debug)]
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = T;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map))
            }
        }

        if pitfall::active(Pitfall::StructFromArray) {
            return T::deserialize(deserializer).map(Object);
        }
        deserializer
            .deserialize_map(ObjectVisitor(PhantomData))
            .map(Object)
    }
}

impl<T> std::ops::Deref for Object<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

fn null_as_empty<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    if pitfall::active(Pitfall::DefaultVsNull) {
        return Vec::deserialize(d);
    }
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// Reads a finish reason from a JSON string only.
///
/// Fixed: serde's derived `Deserialize` for an enum also reads an externally tagged variant from
/// a one-key map, so `"finish_reason": {"stop": null}` was the finish reason `stop`. R6 wants one
/// of three strings; the text is read first, then matched against the variants.
fn finish_reason<'de, D: Deserializer<'de>>(d: D) -> Result<Option<FinishReason>, D::Error> {
    if pitfall::active(Pitfall::EnumFromMap) {
        return Option::<FinishReason>::deserialize(d);
    }
    match Option::<String>::deserialize(d)? {
        None => Ok(None),
        Some(text) => FinishReason::deserialize(text.as_str().into_deserializer()).map(Some),
    }
}

fn tool_index<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    if pitfall::active(Pitfall::IndexTryFrom) {
        // As first written: any i64 is read here; a negative one fails only in `check`.
        return Ok(usize::try_from(i64::deserialize(d)?).unwrap_or(usize::MAX));
    }
    minus_zero_is_zero(d)
}

fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Number>, D::Error> {
    if pitfall::active(Pitfall::U64Counts) {
        return Ok(Option::<u64>::deserialize(d)?.map(Number::from));
    }
    // A count `-0` would be kept as the float -0.0, which `reasoning_tokens` refuses.
    minus_zero_is_zero(d)
}

fn integer<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    if pitfall::active(Pitfall::U64Counts) {
        return Option::<u64>::deserialize(d)?
            .map(|n| i64::try_from(n).map_err(de::Error::custom))
            .transpose();
    }
    minus_zero_is_zero(d)
}

/// Reads an integer field (or a count kept as a `Number`), with `-0` as the integer 0.
///
/// Fixed: serde_json parses the integer `-0` as the float -0.0 (to keep its sign), and a `usize`
/// or `i64` field then refuses it ("invalid type: floating point"): a tool-call index `-0` was a
/// protocol error. But `-0` is an integer literal (no fraction, no exponent, RFC 8259) whose
/// value is 0 (R6, R9). A visitor's `visit_f64(-0.0)` cannot tell `-0` from `-0.0` (an integral
/// float, refused like `1.0`: implementation-defined I1), so the field is read as its source text
/// (serde_json's `raw_value` feature) and `-0` alone is read as `0`.
fn minus_zero_is_zero<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    if pitfall::active(Pitfall::MinusZero) {
        return T::deserialize(d);
    }
    let raw = <&RawValue>::deserialize(d)?;
    let text = if raw.get() == "-0" { "0" } else { raw.get() };
    serde_json::from_str(text).map_err(de::Error::custom)
}

/// Whether `data` holds a `\u` escape of an unpaired surrogate (R6: a protocol error anywhere in
/// the payload).
///
/// Fixed: serde_json refuses one in a field it reads into a `String`, but skips an ignored value
/// (`IgnoredAny`) without decoding its escapes, so `{"x": "\udc00"}` passed. A backslash outside
/// a string makes the JSON invalid anyway, so the scan need not track strings.
fn has_lone_surrogate_escape(data: &str) -> bool {
    let bytes = data.as_bytes();
    let unit_at = |i: usize| {
        let hex = bytes.get(i..i + 4)?;
        u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    };
    let mut high_pending = false;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            if high_pending {
                return true;
            }
            i += 1;
            continue;
        }
        let unit = if bytes.get(i + 1) == Some(&b'u') {
            unit_at(i + 2)
        } else {
            None
        };
        match unit {
            Some(0xD800..=0xDBFF) if high_pending => return true,
            Some(0xD800..=0xDBFF) => high_pending = true,
            Some(0xDC00..=0xDFFF) if !high_pending => return true,
            Some(0xDC00..=0xDFFF) => high_pending = false,
            _ if high_pending => return true,
            _ => {}
        }
        i += if unit.is_some() { 6 } else { 2 };
    }
    high_pending
}

/// Reads one payload: one JSON object of the chunk's shape, or a protocol error.
fn parse_chunk(data: &str) -> Result<Chunk, InferError> {
    if !pitfall::active(Pitfall::SurrogateInIgnored) && has_lone_surrogate_escape(data) {
        return Err(protocol("unpaired surrogate escape in the payload"));
    }
    let chunk: Object<Chunk> = serde_json::from_str(data).map_err(|e| protocol(e.to_string()))?;
    Ok(chunk.0)
}

/// `predicted_n` as reasoning tokens (R4): a non-negative integer. Integers beyond 2^53 are read
/// exactly (implementation-defined); `5.0` is a protocol error (implementation-defined too).
fn reasoning_tokens(n: &Number) -> Result<u64, InferError> {
    n.as_u64().ok_or_else(|| {
        protocol(format!(
            "timings.predicted_n must be a non-negative integer, not {n}"
        ))
    })
}

// ---------------------------------------------------------------------------------------------
// What comes out

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatEvent {
    Progress(Progress),
    Reasoning {
        text: String,
    },
    Content {
        text: String,
    },
    ToolCallDelta {
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ToolCall {
    pub id: Option<String>,
    pub name: Option<String>,
    pub arguments: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Completion {
    pub id: String,
    pub content: Option<String>,
    pub reasoning_content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: FinishReason,
    pub timings: Option<Timings>,
    pub reasoning_tokens: u64,
    pub thinking_capped: bool,
}

// ---------------------------------------------------------------------------------------------
// The assembler

#[derive(Debug, Default)]
pub struct Assembler {
    id: Option<String>,
    content: Option<String>,
    reasoning: Option<String>,
    tool_calls: Vec<ToolCall>,
    finish_reason: Option<FinishReason>,
    timings: Option<Timings>,
    reasoning_tokens: u64,
    in_reasoning: bool,
}

impl Assembler {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    pub fn reasoning_tokens(&self) -> u64 {
        self.reasoning_tokens
    }

    pub fn in_reasoning(&self) -> bool {
        self.in_reasoning
    }

    pub fn is_finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// Takes one payload (the text of one `data:` event) and returns its events, in order.
    pub fn push(&mut self, data: &str) -> Result<Vec<ChatEvent>, InferError> {
        let chunk = parse_chunk(data)?;
        if let Some(error) = chunk.error {
            return Err(InferError::Server(error.0.message.unwrap_or_default()));
        }
        self.check(&chunk)?;
        Ok(self.apply(chunk))
    }

    // The rules that depend on the stream so far, checked before anything changes.
    fn check(&self, chunk: &Chunk) -> Result<(), InferError> {
        let mut calls = self.tool_calls.len();
        let timings = chunk.timings.as_deref().or(self.timings.as_ref());
        let predicted_n = timings.and_then(|t| t.predicted_n.as_ref());
        for choice in &chunk.choices {
            let Some(delta) = &choice.delta else { continue };
            if let (Some(n), Some(text)) = (predicted_n, &delta.reasoning_content) {
                if !text.is_empty() {
                    reasoning_tokens(n)?;
                }
            }
            for piece in &delta.tool_calls {
                let index = piece.index;
                if index > calls {
                    return Err(protocol(format!(
                        "tool call index {index} skips ahead: {calls} call(s) so far"
                    )));
                }
                if index == calls {
                    calls += 1;
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, chunk: Chunk) -> Vec<ChatEvent> {
        let mut events = Vec::new();
        if let Some(timings) = chunk.timings {
            self.timings = Some(timings.0);
        }
        if self.id.is_none() {
            self.id = chunk.id.filter(|id| !id.is_empty());
        }
        if let Some(progress) = chunk.prompt_progress {
            events.push(ChatEvent::Progress(progress.0));
        }
        for Object(choice) in chunk.choices {
            if let Some(Object(delta)) = choice.delta {
                if let Some(text) = delta.reasoning_content.filter(|t| !t.is_empty()) {
                    self.reasoning
                        .get_or_insert_with(String::new)
                        .push_str(&text);
                    if let Some(n) = self.timings.as_ref().and_then(|t| t.predicted_n.as_ref()) {
                        self.reasoning_tokens = reasoning_tokens(n).expect("checked in `check`");
                    }
                    self.in_reasoning = true;
                    events.push(ChatEvent::Reasoning { text });
                }
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    self.content.get_or_insert_with(String::new).push_str(&text);
                    self.in_reasoning = false;
                    events.push(ChatEvent::Content { text });
                }
                for Object(piece) in delta.tool_calls {
                    let index = piece.index; // checked in `check`
                    if index == self.tool_calls.len() {
                        self.tool_calls.push(ToolCall::default());
                    }
                    let (name, arguments) = match piece.function {
                        Some(Object(f)) => (f.name, f.arguments.unwrap_or_default()),
                        None => (None, String::new()),
                    };
                    let call = self.tool_calls.get_mut(index).expect("index checked");
                    if call.id.is_none() {
                        call.id = piece.id.clone().filter(|id| !id.is_empty());
                    }
                    if call.name.is_none() {
                        call.name = name.clone().filter(|n| !n.is_empty());
                    }
                    call.arguments.push_str(&arguments);
                    self.in_reasoning = false;
                    events.push(ChatEvent::ToolCallDelta {
                        index,
                        id: piece.id,
                        name,
                        arguments,
                    });
                }
            }
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
        }
        events
    }

    /// Ends the stream and returns the completion.
    pub fn finish(self, thinking_capped: bool) -> Result<Completion, InferError> {
        let finish_reason = self.finish_reason.ok_or(InferError::StreamClosedEarly)?;
        let id = self.id.ok_or_else(|| protocol("no chunk carried an id"))?;
        for (i, call) in self.tool_calls.iter().enumerate() {
            if call.id.is_none() {
                return Err(protocol(format!("tool call {i} never got an id")));
            }
            if call.name.is_none() {
                return Err(protocol(format!("tool call {i} never got a name")));
            }
        }
        Ok(Completion {
            id,
            content: self.content,
            reasoning_content: self.reasoning,
            tool_calls: self.tool_calls,
            finish_reason,
            timings: self.timings,
            reasoning_tokens: self.reasoning_tokens,
            thinking_capped,
        })
    }
}
