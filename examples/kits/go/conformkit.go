// Package conformkit is what every Go target of conform needs besides its assembler: the line
// protocol loop (docs/protocol.md, version 1) and the validated glue for llama-server's own fields.
//
// A maintainer writes only the calls into their assembler:
//
//	conformkit.Serve(conformkit.Hello{Name: "my-asm", Version: "1.0", Language: "go"},
//		func() conformkit.Target[Event, *Completion] { return &target{New()} })
//
// where target's Push, Finish and State call the assembler, and an error it returns is a
// *conformkit.Error (Kind protocol, stream_closed_early or server) or anything else (a crash).
// The loop answers one request at a time, in order, flushing each reply; it reads "data" raw, so a
// payload holding a lone surrogate escape (which encoding/json would silently turn into U+FFFD) is
// answered with a protocol error instead of being pushed changed. No dependencies.
package conformkit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Protocol is the version of the line protocol the kit speaks.
const Protocol = 1

// Error is an assembler's error: Kind is "protocol", "stream_closed_early" or "server".
type Error struct {
	Kind    string
	Message string
}

func (e *Error) Error() string { return e.Kind + ": " + e.Message }

// Protocolf is a protocol error with a formatted message.
func Protocolf(format string, args ...any) *Error {
	return &Error{Kind: "protocol", Message: fmt.Sprintf(format, args...)}
}

// State is the four readers after a push, as the protocol's "state" object.
type State struct {
	ID              *string `json:"id"`
	ReasoningTokens int     `json:"reasoning_tokens"`
	InReasoning     bool    `json:"in_reasoning"`
	IsFinished      bool    `json:"is_finished"`
}

// Target is one case's assembler, as the loop calls it. E is its event type and C its
// completion, each written with encoding/json in the golden files' shapes.
type Target[E any, C any] interface {
	Push(data string) ([]E, error)
	Finish(thinkingCapped bool) (C, error)
	State() State
}

// Hello names the program in reports.
type Hello struct {
	Name     string
	Version  string
	Language string
}

// Options change how the loop answers; the zero value is what the protocol asks for.
type Options struct {
	// PushReply, when set, builds the reply to a successful push instead of the kit (the Go
	// example uses it to show the pitfall of a single reply type with `omitempty`).
	PushReply func(seq *int64, events any, state State) any
}

type request struct {
	Seq            *int64          `json:"seq"`
	Op             string          `json:"op"`
	Protocol       *int            `json:"protocol"`
	Data           json.RawMessage `json:"data"` // raw: see LoneSurrogate
	ThinkingCapped *bool           `json:"thinking_capped"`
}

type errorBody struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// One reply type each: a single struct with `omitempty` would drop an empty "events" list.
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

type pushReply[E any] struct {
	Seq    *int64 `json:"seq"`
	Events []E    `json:"events"`
	State  State  `json:"state"`
}

type finishReply[C any] struct {
	Seq        *int64 `json:"seq"`
	Completion C      `json:"completion"`
}

type errorReply struct {
	Seq   *int64    `json:"seq"`
	Error errorBody `json:"error"`
}

func errorOf(seq *int64, kind, message string) any {
	return errorReply{Seq: seq, Error: errorBody{Kind: kind, Message: message}}
}

// Session answers requests; Serve runs one over stdin and stdout.
type Session[E any, C any] struct {
	hello   Hello
	create  func() Target[E, C]
	options Options
	target  Target[E, C]
}

// NewSession makes a session for the program `hello` names, making targets with `create`.
func NewSession[E any, C any](hello Hello, create func() Target[E, C], options Options) *Session[E, C] {
	return &Session[E, C]{hello: hello, create: create, options: options}
}

// Answer returns the reply to one request line, and whether the program should exit.
func (s *Session[E, C]) Answer(line []byte) (any, bool) {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return errorOf(nil, "bad_request", "the request is not valid JSON: "+err.Error()), false
	}
	if req.Seq == nil {
		return errorOf(nil, "bad_request", `every request needs an integer "seq"`), false
	}
	seq := req.Seq
	switch req.Op {
	case "hello":
		if req.Protocol == nil || *req.Protocol != Protocol {
			return errorOf(seq, "bad_request", "only protocol 1 is spoken here"), false
		}
		h := s.hello
		return helloReply{Seq: seq, Name: h.Name, Version: h.Version, Language: h.Language, Protocol: Protocol}, false
	case "new":
		s.target = s.create()
		return okReply{Seq: seq, OK: true}, false
	case "push":
		var data string
		if err := json.Unmarshal(req.Data, &data); err != nil || len(req.Data) == 0 || req.Data[0] != '"' {
			return errorOf(seq, "bad_request", `"push" needs a string "data"`), false
		}
		if s.target == nil {
			return errorOf(seq, "bad_request", `no case is open: send "new" first`), false
		}
		// Decoding "data" turned a lone surrogate escape into U+FFFD, a valid character. The
		// payload was not valid text (R6): answer as the assembler would, without pushing it.
		if at := LoneSurrogate(string(req.Data)); at >= 0 {
			return errorOf(seq, "protocol", fmt.Sprintf("the payload holds an unpaired surrogate (offset %d of the request's data)", at)), false
		}
		events, err := s.call(func() (any, error) { return s.target.Push(data) })
		if err != nil {
			return errorFor(seq, err), false
		}
		list, _ := events.([]E)
		state := s.target.State()
		if s.options.PushReply != nil {
			return s.options.PushReply(seq, list, state), false
		}
		if list == nil {
			list = []E{} // a nil slice would be written as null, not []
		}
		return pushReply[E]{Seq: seq, Events: list, State: state}, false
	case "finish":
		if req.ThinkingCapped == nil {
			return errorOf(seq, "bad_request", `"finish" needs a boolean "thinking_capped"`), false
		}
		if s.target == nil {
			return errorOf(seq, "bad_request", `no case is open: send "new" first`), false
		}
		capped := *req.ThinkingCapped
		completion, err := s.call(func() (any, error) { return s.target.Finish(capped) })
		if err != nil {
			return errorFor(seq, err), false
		}
		return finishReply[C]{Seq: seq, Completion: completion.(C)}, false
	case "bye":
		return okReply{Seq: seq, OK: true}, true
	default:
		return errorOf(seq, "bad_request", fmt.Sprintf("unknown op %q", req.Op)), false
	}
}

// call runs one call into the assembler; a panic is a crash, not the end of the program.
func (s *Session[E, C]) call(f func() (any, error)) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}

func errorFor(seq *int64, err error) any {
	var e *Error
	if errors.As(err, &e) {
		switch e.Kind {
		case "protocol", "stream_closed_early", "server":
			return errorOf(seq, e.Kind, e.Message)
		}
	}
	return errorOf(seq, "crash", err.Error())
}

// Serve runs the line protocol on standard input and output until "bye" or end of input.
func Serve[E any, C any](hello Hello, create func() Target[E, C], options ...Options) {
	var o Options
	if len(options) > 0 {
		o = options[0]
	}
	if err := ServeIO(os.Stdin, os.Stdout, NewSession(hello, create, o)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// ServeIO runs a session over `in` and `out`, flushing every reply.
func ServeIO[E any, C any](in io.Reader, out io.Writer, s *Session[E, C]) error {
	reader := bufio.NewReader(in)
	writer := bufio.NewWriter(out)
	enc := json.NewEncoder(writer)
	for {
		line, err := reader.ReadBytes('\n')
		if len(line) > 0 {
			reply, exit := s.Answer(line)
			if err := enc.Encode(reply); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			if err := writer.Flush(); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			if exit {
				return nil
			}
		}
		if err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("read: %w", err)
		}
	}
}

// LoneSurrogate returns the offset of the first \u escape of an unpaired surrogate in JSON text
// (a request's raw "data", or a payload), or -1.
func LoneSurrogate(text string) int {
	for i := 0; i < len(text); i++ {
		if text[i] != '\\' {
			continue
		}
		unit, ok := hexEscape(text, i)
		if !ok {
			i++ // some other escape (\\, \", \n...): skip the escaped character
			continue
		}
		switch {
		case unit >= 0xD800 && unit <= 0xDBFF:
			if low, ok := hexEscape(text, i+6); ok && low >= 0xDC00 && low <= 0xDFFF {
				i += 11
				continue
			}
			return i
		case unit >= 0xDC00 && unit <= 0xDFFF:
			return i
		}
		i += 5
	}
	return -1
}

func hexEscape(text string, i int) (uint64, bool) {
	if i+6 > len(text) || text[i] != '\\' || text[i+1] != 'u' {
		return 0, false
	}
	unit, err := strconv.ParseUint(text[i+2:i+6], 16, 16)
	return unit, err == nil
}
