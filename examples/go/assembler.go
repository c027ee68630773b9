package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// maxSafeInteger is 2^53−1: every integer up to it, and none much beyond, is held exactly by a float64.
const maxSafeInteger = 1<<53 - 1

// ErrorKind is one of the three ways push and finish fail.
type ErrorKind string

const (
	KindProtocol          ErrorKind = "protocol"
	KindStreamClosedEarly ErrorKind = "stream_closed_early"
	KindServer            ErrorKind = "server"
)

// Error is the only error the assembler returns.
type Error struct {
	Kind    ErrorKind
	Message string
}

func (e *Error) Error() string { return string(e.Kind) + ": " + e.Message }

func protocolError(format string, args ...any) *Error {
	return &Error{Kind: KindProtocol, Message: fmt.Sprintf(format, args...)}
}

// The payload: one chunk of llama-server's stream. Pointer fields are the optional ones; nil means
// absent or null. Array elements are pointers too, so that a null element can be told from an
// empty object: encoding/json decodes null into a struct as a silent no-op (the zero value), but
// "null means absent" is for fields, never for elements (R6).
type chunk struct {
	ID             *string         `json:"id"`
	Choices        []*choice       `json:"choices"`
	Timings        *Timings        `json:"timings"`
	PromptProgress *promptProgress `json:"prompt_progress"`
	Error          *serverError    `json:"error"`
}

type choice struct {
	Delta        *delta  `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Content          *string     `json:"content"`
	ReasoningContent *string     `json:"reasoning_content"`
	ToolCalls        []*toolCall `json:"tool_calls"`
}

type toolCall struct {
	Index    *int      `json:"index"`
	ID       *string   `json:"id"`
	Function *function `json:"function"`
}

type function struct {
	Name      *string `json:"name"`
	Arguments *string `json:"arguments"`
}

type promptProgress struct {
	Total     *int `json:"total"`
	Cache     *int `json:"cache"`
	Processed *int `json:"processed"`
	TimeMs    *int `json:"time_ms"`
}

type serverError struct {
	Message *string `json:"message"`
}

// encoding/json matches object keys to struct fields case-insensitively ("Content" and "CONTENT"
// fill Content), and a key that comes twice decodes into the same field twice, merging two
// objects into one. R7 says a key that is not exactly a read name is unknown, hence ignored; and a
// duplicate key must leave the last value (or fail). So every payload type decodes through
// decodeFields: the object goes into a map first (exact keys, the last duplicate wins), and only
// then is each read name decoded into its field.
func decodeFields(data []byte, fields map[string]any) error {
	var object map[string]json.RawMessage
	if err := json.Unmarshal(data, &object); err != nil {
		return err
	}
	for name, field := range fields {
		if raw, ok := object[name]; ok {
			if err := json.Unmarshal(raw, field); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return nil
}

// naturalDecoding is true under the pitfalls the exact-key decoding fixes: the tests run the
// plain struct decoding to show that the suite catches it.
func naturalDecoding() bool {
	return pitfall("case_insensitive_keys") || pitfall("duplicate_keys_merge")
}

func (c *chunk) UnmarshalJSON(data []byte) error {
	if naturalDecoding() {
		type plain chunk
		return json.Unmarshal(data, (*plain)(c))
	}
	return decodeFields(data, map[string]any{
		"id": &c.ID, "choices": &c.Choices, "timings": &c.Timings,
		"prompt_progress": &c.PromptProgress, "error": &c.Error,
	})
}

func (c *choice) UnmarshalJSON(data []byte) error {
	if naturalDecoding() {
		type plain choice
		return json.Unmarshal(data, (*plain)(c))
	}
	return decodeFields(data, map[string]any{"delta": &c.Delta, "finish_reason": &c.FinishReason})
}

func (d *delta) UnmarshalJSON(data []byte) error {
	if naturalDecoding() {
		type plain delta
		return json.Unmarshal(data, (*plain)(d))
	}
	return decodeFields(data, map[string]any{
		"content": &d.Content, "reasoning_content": &d.ReasoningContent, "tool_calls": &d.ToolCalls,
	})
}

func (t *toolCall) UnmarshalJSON(data []byte) error {
	if naturalDecoding() {
		type plain toolCall
		return json.Unmarshal(data, (*plain)(t))
	}
	return decodeFields(data, map[string]any{"index": &t.Index, "id": &t.ID, "function": &t.Function})
}

func (f *function) UnmarshalJSON(data []byte) error {
	if naturalDecoding() {
		type plain function
		return json.Unmarshal(data, (*plain)(f))
	}
	return decodeFields(data, map[string]any{"name": &f.Name, "arguments": &f.Arguments})
}

func (p *promptProgress) UnmarshalJSON(data []byte) error {
	if naturalDecoding() {
		type plain promptProgress
		return json.Unmarshal(data, (*plain)(p))
	}
	return decodeFields(data, map[string]any{
		"total": &p.Total, "cache": &p.Cache, "processed": &p.Processed, "time_ms": &p.TimeMs,
	})
}

func (e *serverError) UnmarshalJSON(data []byte) error {
	if naturalDecoding() {
		type plain serverError
		return json.Unmarshal(data, (*plain)(e))
	}
	return decodeFields(data, map[string]any{"message": &e.Message})
}

func (t *Timings) UnmarshalJSON(data []byte) error {
	if naturalDecoding() {
		type plain Timings
		return json.Unmarshal(data, (*plain)(t))
	}
	return decodeFields(data, map[string]any{
		"cache_n": &t.CacheN, "prompt_n": &t.PromptN, "prompt_ms": &t.PromptMs,
		"prompt_per_token_ms": &t.PromptPerTokenMs, "prompt_per_second": &t.PromptPerSecond,
		"predicted_n": &t.PredictedN, "predicted_ms": &t.PredictedMs,
		"predicted_per_token_ms": &t.PredictedPerTokenMs, "predicted_per_second": &t.PredictedPerSecond,
		"draft_n": &t.DraftN, "draft_n_accepted": &t.DraftNAccepted,
	})
}

// loneSurrogate returns the offset of the first \u escape of an unpaired UTF-16 surrogate in
// JSON text, or -1. encoding/json silently turns such an escape into U+FFFD, where R6 makes it a
// protocol error anywhere in the payload.
func loneSurrogate(text string) int {
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

// hexEscape reads a \uXXXX escape at text[i:].
func hexEscape(text string, i int) (uint64, bool) {
	if i+6 > len(text) || text[i] != '\\' || text[i+1] != 'u' {
		return 0, false
	}
	unit, err := strconv.ParseUint(text[i+2:i+6], 16, 16)
	return unit, err == nil
}

// Timings is llama-server's timings object, as the completion reports it.
type Timings struct {
	CacheN              *float64 `json:"cache_n"`
	PromptN             *float64 `json:"prompt_n"`
	PromptMs            *float64 `json:"prompt_ms"`
	PromptPerTokenMs    *float64 `json:"prompt_per_token_ms"`
	PromptPerSecond     *float64 `json:"prompt_per_second"`
	PredictedN          *float64 `json:"predicted_n"`
	PredictedMs         *float64 `json:"predicted_ms"`
	PredictedPerTokenMs *float64 `json:"predicted_per_token_ms"`
	PredictedPerSecond  *float64 `json:"predicted_per_second"`
	DraftN              *float64 `json:"draft_n"`
	DraftNAccepted      *float64 `json:"draft_n_accepted"`
}

// Events, in the golden files' shapes.

type Event interface{ isEvent() }

type ProgressEvent struct {
	Type      string `json:"type"`
	Total     *int   `json:"total"`
	Cache     *int   `json:"cache"`
	Processed *int   `json:"processed"`
	TimeMs    *int   `json:"time_ms"`
}

type TextEvent struct {
	Type string `json:"type"` // "reasoning" or "content"
	Text string `json:"text"`
}

type ToolCallDelta struct {
	Type      string  `json:"type"`
	Index     int     `json:"index"`
	ID        *string `json:"id"`
	Name      *string `json:"name"`
	Arguments string  `json:"arguments"`
}

func (ProgressEvent) isEvent() {}
func (TextEvent) isEvent()     {}
func (ToolCallDelta) isEvent() {}

// ToolCall is one assembled tool call of the completion.
type ToolCall struct {
	ID        *string `json:"id"`
	Name      *string `json:"name"`
	Arguments string  `json:"arguments"`
}

// Completion is what finish returns.
type Completion struct {
	ID               string     `json:"id"`
	Content          *string    `json:"content"`
	ReasoningContent *string    `json:"reasoning_content"`
	ToolCalls        []ToolCall `json:"tool_calls"`
	FinishReason     string     `json:"finish_reason"`
	Timings          *Timings   `json:"timings"`
	ReasoningTokens  int        `json:"reasoning_tokens"`
	ThinkingCapped   bool       `json:"thinking_capped"`
}

// Assembler folds the payloads of one streamed chat completion into events and a completion.
type Assembler struct {
	id              *string
	content         *string
	reasoning       *string
	calls           []ToolCall
	finishReason    *string
	timings         *Timings
	reasoningTokens int
	inReasoning     bool
}

func (a *Assembler) ID() *string          { return a.id }
func (a *Assembler) ReasoningTokens() int { return a.reasoningTokens }
func (a *Assembler) InReasoning() bool    { return a.inReasoning }
func (a *Assembler) IsFinished() bool     { return a.finishReason != nil }

// Push reads one payload and returns its events, in order.
func (a *Assembler) Push(data string) ([]Event, error) {
	if at := loneSurrogate(data); at >= 0 && !pitfall("surrogate_fffd") {
		return nil, protocolError("the payload has an unpaired surrogate escape at offset %d", at)
	}
	// Decoding into a pointer tells a null payload from an object: into a struct, null is a silent
	// no-op that leaves an empty chunk.
	var c *chunk
	var err error
	if pitfall("null_payload") {
		c = new(chunk)
		err = json.Unmarshal([]byte(data), c)
	} else {
		err = json.Unmarshal([]byte(data), &c)
	}
	if err != nil {
		return nil, protocolError("invalid payload: %v", err)
	}
	if c == nil {
		return nil, protocolError("the payload is null, not an object")
	}
	if err := validate(c); err != nil {
		return nil, err
	}
	if c.Error != nil {
		msg := ""
		if c.Error.Message != nil {
			msg = *c.Error.Message
		}
		return nil, &Error{Kind: KindServer, Message: msg}
	}
	if err := a.check(c); err != nil {
		return nil, err
	}
	return a.apply(c), nil
}

// validate checks what the types alone do not: the finish reasons and the required tool-call index.
func validate(c *chunk) error {
	for i := range c.Choices {
		if c.Choices[i] == nil {
			if !pitfall("null_element") {
				return protocolError("choices[%d] is null, not an object", i)
			}
			c.Choices[i] = &choice{} // what decoding into []choice makes of null
		}
		ch := c.Choices[i]
		if ch.FinishReason != nil {
			switch *ch.FinishReason {
			case "stop", "tool_calls", "length":
			default:
				return protocolError("choices[%d].finish_reason %q is not stop, tool_calls or length", i, *ch.FinishReason)
			}
		}
		if ch.Delta == nil {
			continue
		}
		for j, tc := range ch.Delta.ToolCalls {
			if tc == nil {
				return protocolError("choices[%d].delta.tool_calls[%d] is null, not an object", i, j)
			}
			if tc.Index == nil {
				return protocolError("choices[%d].delta.tool_calls[%d].index is required", i, j)
			}
			if *tc.Index < 0 {
				return protocolError("choices[%d].delta.tool_calls[%d].index is negative", i, j)
			}
		}
	}
	return nil
}

// check applies the rules that depend on the stream so far, before anything changes.
func (a *Assembler) check(c *chunk) error {
	timings := a.timings
	if c.Timings != nil {
		timings = c.Timings
	}
	calls := len(a.calls)
	for _, ch := range c.Choices {
		if ch.Delta == nil {
			continue
		}
		if r := ch.Delta.ReasoningContent; r != nil && *r != "" && timings != nil && timings.PredictedN != nil {
			// int(n) of a float64 beyond int64's range is unspecified in Go (on amd64 it is the
			// most negative int64), so the range is checked before the conversion in apply: an
			// integer field holds at most ±(2^53−1), the integers a float64 holds exactly (I2).
			n := *timings.PredictedN
			tooBig := n > maxSafeInteger && !pitfall("float_to_int")
			if n < 0 || n != math.Trunc(n) || tooBig {
				return protocolError("timings.predicted_n must be a non-negative integer, not %v", n)
			}
		}
		for _, tc := range ch.Delta.ToolCalls {
			if *tc.Index > calls {
				return protocolError("tool call index %d skips ahead: %d call(s) so far", *tc.Index, calls)
			}
			if *tc.Index == calls {
				calls++
			}
		}
	}
	return nil
}

func appendText(to **string, text string) {
	if *to == nil {
		*to = new(string)
	}
	**to += text
}

func (a *Assembler) apply(c *chunk) []Event {
	var events []Event
	if c.Timings != nil {
		a.timings = c.Timings
	}
	if a.id == nil && c.ID != nil && *c.ID != "" {
		a.id = c.ID
	}
	if p := c.PromptProgress; p != nil {
		events = append(events, ProgressEvent{"progress", p.Total, p.Cache, p.Processed, p.TimeMs})
	}
	for _, ch := range c.Choices {
		if d := ch.Delta; d != nil {
			if d.ReasoningContent != nil && *d.ReasoningContent != "" {
				events = append(events, TextEvent{"reasoning", *d.ReasoningContent})
				appendText(&a.reasoning, *d.ReasoningContent)
				if a.timings != nil && a.timings.PredictedN != nil {
					a.reasoningTokens = int(*a.timings.PredictedN)
				}
				a.inReasoning = true
			}
			if d.Content != nil && *d.Content != "" {
				events = append(events, TextEvent{"content", *d.Content})
				appendText(&a.content, *d.Content)
				a.inReasoning = false
			}
			for _, tc := range d.ToolCalls {
				ev := ToolCallDelta{Type: "tool_call_delta", Index: *tc.Index, ID: tc.ID}
				if tc.Function != nil {
					ev.Name = tc.Function.Name
					if tc.Function.Arguments != nil {
						ev.Arguments = *tc.Function.Arguments
					}
				}
				events = append(events, ev)
				if ev.Index == len(a.calls) {
					a.calls = append(a.calls, ToolCall{})
				}
				call := &a.calls[ev.Index]
				if call.ID == nil && ev.ID != nil && *ev.ID != "" {
					call.ID = ev.ID
				}
				if call.Name == nil && ev.Name != nil && *ev.Name != "" {
					call.Name = ev.Name
				}
				call.Arguments += ev.Arguments
				a.inReasoning = false
			}
		}
		if ch.FinishReason != nil {
			a.finishReason = ch.FinishReason
		}
	}
	return events
}

// Finish ends the stream and returns the completion.
func (a *Assembler) Finish(thinkingCapped bool) (*Completion, error) {
	if a.finishReason == nil {
		return nil, &Error{Kind: KindStreamClosedEarly, Message: "the stream ended before a finish_reason arrived"}
	}
	if a.id == nil {
		return nil, protocolError("no chunk carried an id")
	}
	for i, call := range a.calls {
		if call.ID == nil {
			return nil, protocolError("tool call %d never got an id", i)
		}
		if call.Name == nil {
			return nil, protocolError("tool call %d never got a name", i)
		}
	}
	// A nil slice is written as null; the completion's tool_calls is always a list. (Copying also
	// keeps the completion apart from the assembler.)
	calls := append([]ToolCall{}, a.calls...)
	if pitfall("nil_slice") {
		calls = a.calls
	}
	return &Completion{
		ID:               *a.id,
		Content:          a.content,
		ReasoningContent: a.reasoning,
		ToolCalls:        calls,
		FinishReason:     *a.finishReason,
		Timings:          a.timings,
		ReasoningTokens:  a.reasoningTokens,
		ThinkingCapped:   thinkingCapped,
	}, nil
}
