// Package conformkit is what every Go target of conform needs besides its assembler: the line
// protocol loop (docs/protocol.md, versions 1 and 2) and the validated glue for llama-server's own
// fields.
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
// answered with a protocol error instead of being pushed changed. When the harness offers
// protocol 2 in "hello", the loop speaks it: payloads framed after their request line (no JSON
// string to unescape), cases planned ahead (what comes after the reply that ends a case is
// answered "skipped"), and NaN or an infinity in a reply written as {"$number": "NaN"}, which
// encoding/json cannot write. No dependencies.
package conformkit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Protocol is the highest version of the line protocol the kit speaks: 2 when "hello" offers it
// in "accept", else 1.
const Protocol = 2

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
	Accept         json.RawMessage `json:"accept"` // the versions the harness speaks (a list)
	Data           json.RawMessage `json:"data"`   // raw: see LoneSurrogate
	Bytes          *int64          `json:"bytes"`  // protocol 2: the payload follows the line
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

// Protocol 2: a push or finish planned after the reply that ended its case.
type skippedReply struct {
	Seq     *int64 `json:"seq"`
	Skipped bool   `json:"skipped"`
}

func errorOf(seq *int64, kind, message string) any {
	return errorReply{Seq: seq, Error: errorBody{Kind: kind, Message: message}}
}

// Session answers requests; Serve runs one over stdin and stdout.
type Session[E any, C any] struct {
	hello    Hello
	create   func() Target[E, C]
	options  Options
	target   Target[E, C]
	protocol int  // the version agreed in "hello"
	ended    bool // the case had its error or its finish (protocol 2 skips what follows)
}

// NewSession makes a session for the program `hello` names, making targets with `create`.
func NewSession[E any, C any](hello Hello, create func() Target[E, C], options Options) *Session[E, C] {
	return &Session[E, C]{hello: hello, create: create, options: options}
}

// Answer returns the reply to one request line, and whether the program should exit. `frames`
// holds what follows the line: in protocol 2, a push's payload may come there (docs/protocol.md,
// Framed payloads).
func (s *Session[E, C]) Answer(line []byte, frames io.Reader) (any, bool) {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return errorOf(nil, "bad_request", "the request is not valid JSON: "+err.Error()), false
	}
	if req.Seq == nil {
		return errorOf(nil, "bad_request", `every request needs an integer "seq"`), false
	}
	seq := req.Seq
	var framed []byte
	if req.Op == "push" && req.Bytes != nil {
		// Read before anything else is checked: the next request starts after it.
		var problem string
		if framed, problem = s.frame(*req.Bytes, frames); problem != "" {
			return errorOf(seq, "bad_request", problem), false
		}
	}
	switch req.Op {
	case "hello":
		if req.Protocol == nil || (*req.Protocol != 1 && *req.Protocol != Protocol) {
			return errorOf(seq, "bad_request", "only protocols 1 and 2 are spoken here"), false
		}
		s.protocol = *req.Protocol
		var accept []any
		if json.Unmarshal(req.Accept, &accept) == nil {
			for _, version := range accept {
				if version == float64(Protocol) {
					s.protocol = Protocol
				}
			}
		}
		h := s.hello
		return helloReply{Seq: seq, Name: h.Name, Version: h.Version, Language: h.Language, Protocol: s.protocol}, false
	case "new":
		s.target = s.create()
		s.ended = false
		return okReply{Seq: seq, OK: true}, false
	case "push":
		data := string(framed)
		if framed == nil {
			if err := json.Unmarshal(req.Data, &data); err != nil || len(req.Data) == 0 || req.Data[0] != '"' {
				return errorOf(seq, "bad_request", `"push" needs a string "data"`), false
			}
		}
		if s.ended && s.protocol >= 2 {
			return skippedReply{Seq: seq, Skipped: true}, false
		}
		if s.target == nil {
			return errorOf(seq, "bad_request", `no case is open: send "new" first`), false
		}
		// Decoding "data" turned a lone surrogate escape into U+FFFD, a valid character. The
		// payload was not valid text (R6): answer as the assembler would, without pushing it.
		// (A framed payload is UTF-8, which cannot hold one.)
		if at := LoneSurrogate(string(req.Data)); at >= 0 {
			s.ended = true
			return errorOf(seq, "protocol", fmt.Sprintf("the payload holds an unpaired surrogate (offset %d of the request's data)", at)), false
		}
		events, err := s.call(func() (any, error) { return s.target.Push(data) })
		if err != nil {
			s.ended = true
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
		if s.ended && s.protocol >= 2 {
			return skippedReply{Seq: seq, Skipped: true}, false
		}
		if s.target == nil {
			return errorOf(seq, "bad_request", `no case is open: send "new" first`), false
		}
		s.ended = true
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

// frame reads a framed payload: `size` bytes and a LF (a problem is a bad request).
func (s *Session[E, C]) frame(size int64, frames io.Reader) ([]byte, string) {
	if s.protocol < 2 || frames == nil {
		return nil, `"bytes" is protocol 2, which was not agreed in "hello"`
	}
	if size < 0 || size > math.MaxInt32 {
		return nil, `"bytes" must be a non-negative integer (below 2 GiB)`
	}
	payload := make([]byte, size+1)
	if _, err := io.ReadFull(frames, payload); err != nil || payload[size] != '\n' {
		return nil, fmt.Sprintf("the payload after the request line is not %d bytes and a LF", size)
	}
	if !utf8.Valid(payload[:size]) {
		return nil, "the framed payload is not UTF-8"
	}
	return payload[:size], ""
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
	reader := bufio.NewReaderSize(in, 64*1024)
	writer := bufio.NewWriter(out)
	enc := json.NewEncoder(writer)
	for {
		line, err := reader.ReadBytes('\n')
		if len(line) > 0 {
			reply, exit := s.Answer(line, reader)
			encoded := enc.Encode(reply)
			var unsupported *json.UnsupportedValueError
			if errors.As(encoded, &unsupported) && s.protocol >= 2 {
				// NaN or an infinity: protocol 2 writes it as {"$number": "NaN"}.
				encoded = enc.Encode(markNumbers(reflect.ValueOf(reply)))
			}
			if encoded != nil {
				return fmt.Errorf("write: %w", encoded)
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

// markNumbers is `v` as encoding/json would write it, with every NaN or infinity as the
// protocol's {"$number": "NaN"} (encoding/json refuses to write them at all).
func markNumbers(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	if marshaler, ok := v.Interface().(json.Marshaler); ok && (v.Kind() != reflect.Pointer || !v.IsNil()) {
		if raw, err := marshaler.MarshalJSON(); err == nil {
			return json.RawMessage(raw)
		}
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		switch f := v.Float(); {
		case math.IsNaN(f):
			return map[string]string{"$number": "NaN"}
		case math.IsInf(f, 1):
			return map[string]string{"$number": "Infinity"}
		case math.IsInf(f, -1):
			return map[string]string{"$number": "-Infinity"}
		}
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return markNumbers(v.Elem())
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil
		}
		items := make([]any, v.Len())
		for i := range items {
			items[i] = markNumbers(v.Index(i))
		}
		return items
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		object := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			object[fmt.Sprint(it.Key().Interface())] = markNumbers(it.Value())
		}
		return object
	case reflect.Struct:
		object := map[string]any{}
		markFields(v, object)
		return object
	}
	return v.Interface()
}

// markFields puts the exported fields of struct `v` into `object` by their JSON names (those of
// an embedded struct without a name of its own among them, as encoding/json does).
func markFields(v reflect.Value, object map[string]any) {
	for i := 0; i < v.NumField(); i++ {
		field, value := v.Type().Field(i), v.Field(i)
		tag := field.Tag.Get("json")
		name, options, _ := strings.Cut(tag, ",")
		if tag == "-" || !field.IsExported() {
			continue
		}
		if field.Anonymous && name == "" && value.Kind() == reflect.Struct {
			markFields(value, object)
			continue
		}
		if name == "" {
			name = field.Name
		}
		if strings.Contains(options, "omitempty") && empty(value) {
			continue
		}
		object[name] = markNumbers(value)
	}
}

// empty is encoding/json's test for `omitempty`.
func empty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	case reflect.Struct:
		return false
	}
	return v.IsZero()
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
