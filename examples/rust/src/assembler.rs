//! Folds the payloads of one streamed chat completion from llama-server into events and one
//! completion (conform's docs/spec.md, rules R1 to R9). No I/O: the input is one payload at a time.

use serde::{Deserialize, Serialize};

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
            InferError::StreamClosedEarly => "the stream ended before a finish_reason arrived".into(),
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
    #[serde(default)]
    choices: Vec<Choice>,
    timings: Option<Timings>,
    prompt_progress: Option<Progress>,
    error: Option<ServerError>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    delta: Option<Delta>,
    finish_reason: Option<FinishReason>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    content: Option<String>,
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCallPiece>,
}

#[derive(Debug, Deserialize)]
struct ToolCallPiece {
    // The index comes from the server: read it signed, convert with try_from.
    index: i64,
    id: Option<String>,
    function: Option<Function>,
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
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Timings {
    pub cache_n: Option<u64>,
    pub prompt_n: Option<u64>,
    pub prompt_ms: Option<f64>,
    pub prompt_per_token_ms: Option<f64>,
    pub prompt_per_second: Option<f64>,
    pub predicted_n: Option<u64>,
    pub predicted_ms: Option<f64>,
    pub predicted_per_token_ms: Option<f64>,
    pub predicted_per_second: Option<f64>,
    pub draft_n: Option<u64>,
    pub draft_n_accepted: Option<u64>,
}

/// `prompt_progress`, and the progress event made from it.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Progress {
    pub total: Option<u64>,
    pub cache: Option<u64>,
    pub processed: Option<u64>,
    pub time_ms: Option<u64>,
}

// ---------------------------------------------------------------------------------------------
// What comes out

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatEvent {
    Progress(Progress),
    Reasoning { text: String },
    Content { text: String },
    ToolCallDelta { index: usize, id: Option<String>, name: Option<String>, arguments: String },
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
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| protocol(e.to_string()))?;
        if let Some(error) = chunk.error {
            return Err(InferError::Server(error.message.unwrap_or_default()));
        }
        self.check(&chunk)?;
        Ok(self.apply(chunk))
    }

    // The rules that depend on the stream so far, checked before anything changes.
    fn check(&self, chunk: &Chunk) -> Result<(), InferError> {
        let mut calls = self.tool_calls.len();
        for choice in &chunk.choices {
            let Some(delta) = &choice.delta else { continue };
            for piece in &delta.tool_calls {
                let index = usize::try_from(piece.index)
                    .map_err(|_| protocol(format!("tool call index {} is negative", piece.index)))?;
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
        if chunk.timings.is_some() {
            self.timings = chunk.timings;
        }
        if self.id.is_none() {
            self.id = chunk.id.filter(|id| !id.is_empty());
        }
        if let Some(progress) = chunk.prompt_progress {
            events.push(ChatEvent::Progress(progress));
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.reasoning_content.filter(|t| !t.is_empty()) {
                    self.reasoning.get_or_insert_with(String::new).push_str(&text);
                    if let Some(n) = self.timings.as_ref().and_then(|t| t.predicted_n) {
                        self.reasoning_tokens = n;
                    }
                    self.in_reasoning = true;
                    events.push(ChatEvent::Reasoning { text });
                }
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    self.content.get_or_insert_with(String::new).push_str(&text);
                    self.in_reasoning = false;
                    events.push(ChatEvent::Content { text });
                }
                for piece in delta.tool_calls {
                    let index = piece.index as usize; // checked in `check`
                    if index == self.tool_calls.len() {
                        self.tool_calls.push(ToolCall::default());
                    }
                    let (name, arguments) = match piece.function {
                        Some(f) => (f.name, f.arguments.unwrap_or_default()),
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
                    events.push(ChatEvent::ToolCallDelta { index, id: piece.id, name, arguments });
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
