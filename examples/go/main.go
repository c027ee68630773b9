// Command conform-go is an assembler for llama-server's streamed chat completions that speaks
// conform's line protocol (docs/protocol.md) on standard input and output.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

type request struct {
	Seq            *int64          `json:"seq"`
	Op             string          `json:"op"`
	Protocol       *int            `json:"protocol"`
	Data           json.RawMessage `json:"data"` // raw: see the push case
	ThinkingCapped *bool           `json:"thinking_capped"`
}

type errorBody struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

type state struct {
	ID              *string `json:"id"`
	ReasoningTokens int     `json:"reasoning_tokens"`
	InReasoning     bool    `json:"in_reasoning"`
	IsFinished      bool    `json:"is_finished"`
}

// The replies, one type each. A single reply struct with `omitempty` on every optional part is the
// obvious Go shape, but `omitempty` drops an empty slice too: a push with no events would lose its
// "events" field, which the protocol makes garbage (pitfall "omitempty", kept below for the tests).
type helloReply struct {
	Seq      *int64 `json:"seq"`
	Name     string `json:"name"`
	Version  string `json:"version"`
	Language string `json:"language"`
	Protocol int    `json:"protocol"`
}

type okReply struct {
	Seq *int64 `json:"seq"`
	OK  bool   `json:"ok"`
}

type pushReply struct {
	Seq    *int64  `json:"seq"`
	Events []Event `json:"events"`
	State  state   `json:"state"`
}

type finishReply struct {
	Seq        *int64      `json:"seq"`
	Completion *Completion `json:"completion"`
}

type errorReply struct {
	Seq   *int64    `json:"seq"`
	Error errorBody `json:"error"`
}

// pitfallOmitEmptyReply is the natural single reply type, used only under CONFORM_GO_PITFALL=omitempty.
type pitfallOmitEmptyReply struct {
	Seq    *int64  `json:"seq"`
	Events []Event `json:"events,omitempty"`
	State  *state  `json:"state,omitempty"`
}

type reply = any

func newErrorReply(seq *int64, kind, message string) reply {
	return errorReply{Seq: seq, Error: errorBody{Kind: kind, Message: message}}
}

type session struct {
	asm *Assembler
}

// answer returns the reply to one request line, and whether the program should exit.
func (s *session) answer(line []byte) (reply, bool) {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return newErrorReply(nil, "bad_request", "the request is not valid JSON: "+err.Error()), false
	}
	if req.Seq == nil {
		return newErrorReply(nil, "bad_request", `every request needs an integer "seq"`), false
	}
	seq := req.Seq
	switch req.Op {
	case "hello":
		if req.Protocol == nil || *req.Protocol != 1 {
			return newErrorReply(seq, "bad_request", "only protocol 1 is spoken here"), false
		}
		return helloReply{Seq: seq, Name: "conform-go-example", Version: "0.1.0", Language: "go", Protocol: 1}, false
	case "new":
		s.asm = &Assembler{}
		return okReply{Seq: seq, OK: true}, false
	case "push":
		var data string
		if err := json.Unmarshal(req.Data, &data); err != nil || len(req.Data) == 0 || req.Data[0] != '"' {
			return newErrorReply(seq, "bad_request", `"push" needs a string "data"`), false
		}
		if s.asm == nil {
			return newErrorReply(seq, "bad_request", `no case is open: send "new" first`), false
		}
		// A payload holding a lone surrogate arrives as an escape in the request line, and decoding
		// "data" turns it into U+FFFD, a valid character. The payload was not valid text, which R6
		// makes a protocol error: answer as the assembler would, instead of pushing the changed text.
		if at := loneSurrogate(string(req.Data)); at >= 0 {
			return newErrorReply(seq, "protocol", fmt.Sprintf("the payload holds an unpaired surrogate (offset %d of the request's data)", at)), false
		}
		events, err := s.asm.Push(data)
		if err != nil {
			return assemblerError(seq, err), false
		}
		a := s.asm
		st := state{a.ID(), a.ReasoningTokens(), a.InReasoning(), a.IsFinished()}
		if pitfall("omitempty") {
			return pitfallOmitEmptyReply{Seq: seq, Events: events, State: &st}, false
		}
		if events == nil {
			events = []Event{} // a nil slice would be written as null, not []
		}
		return pushReply{Seq: seq, Events: events, State: st}, false
	case "finish":
		if req.ThinkingCapped == nil {
			return newErrorReply(seq, "bad_request", `"finish" needs a boolean "thinking_capped"`), false
		}
		if s.asm == nil {
			return newErrorReply(seq, "bad_request", `no case is open: send "new" first`), false
		}
		completion, err := s.asm.Finish(*req.ThinkingCapped)
		if err != nil {
			return assemblerError(seq, err), false
		}
		return finishReply{Seq: seq, Completion: completion}, false
	case "bye":
		return okReply{Seq: seq, OK: true}, true
	default:
		return newErrorReply(seq, "bad_request", fmt.Sprintf("unknown op %q", req.Op)), false
	}
}

func assemblerError(seq *int64, err error) reply {
	var e *Error
	if errors.As(err, &e) {
		return newErrorReply(seq, string(e.Kind), e.Message)
	}
	return newErrorReply(seq, "crash", err.Error())
}

func main() {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	s := &session{}
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			r, exit := s.answer(line)
			if err := enc.Encode(r); err != nil {
				fmt.Fprintln(os.Stderr, "write:", err)
				os.Exit(1)
			}
			out.Flush()
			if exit {
				return
			}
		}
		if err == io.EOF {
			return
		} else if err != nil {
			fmt.Fprintln(os.Stderr, "read:", err)
			os.Exit(1)
		}
	}
}
