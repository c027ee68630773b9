//! conform's line protocol (docs/protocol.md) around the assembler: one JSON request per line on
//! stdin, one JSON reply per line on stdout. The loop is the adapter kit's (examples/kits/rust):
//! this file only says what to call.

mod assembler;
mod pitfall;

use conform_kit::{serve, Hello, KindedError, State, Target};

use assembler::{Assembler, ChatEvent, Completion, InferError};

impl KindedError for InferError {
    fn kind(&self) -> &str {
        InferError::kind(self)
    }
    fn message(&self) -> String {
        InferError::message(self)
    }
}

impl Target for Assembler {
    type Event = ChatEvent;
    type Completion = Completion;
    type Error = InferError;

    fn push(&mut self, data: &str) -> Result<Vec<ChatEvent>, InferError> {
        Assembler::push(self, data)
    }

    fn finish(self, thinking_capped: bool) -> Result<Completion, InferError> {
        Assembler::finish(self, thinking_capped)
    }

    fn state(&self) -> State {
        State {
            id: self.id().map(str::to_string),
            reasoning_tokens: self.reasoning_tokens(),
            in_reasoning: self.in_reasoning(),
            is_finished: self.is_finished(),
        }
    }
}

fn main() {
    if let Err(message) = pitfall::init_from_env() {
        eprintln!("{message}");
        std::process::exit(2);
    }
    let hello = Hello::new("conform-rust-example", env!("CARGO_PKG_VERSION"), "rust");
    serve(hello, Assembler::new);
}
