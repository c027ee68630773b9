package conformkit

import (
	"encoding/json"
	"math"
	"math/big"
	"strings"
)

// The validated llama-server glue: the fields no OpenAI client keeps (timings, prompt_progress,
// the reasoning state), read from a chunk decoded with json.Decoder.UseNumber() (so that an
// integer is told from a fraction and a big integer is not rounded), checked as docs/spec.md says.

// MaxSafeInteger is 2^53-1: an integer field beyond it is a protocol error (contract I2).
const MaxSafeInteger = 1<<53 - 1

// TimingsFields are the eleven timings fields, in the golden files' order.
var TimingsFields = []string{
	"cache_n", "prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second",
	"predicted_n", "predicted_ms", "predicted_per_token_ms", "predicted_per_second",
	"draft_n", "draft_n_accepted",
}

// Timings maps each of the eleven fields to a number, or nil where the server left it out.
type Timings map[string]*float64

// Progress is the progress event.
type Progress struct {
	Type      string `json:"type"`
	Total     *int64 `json:"total"`
	Cache     *int64 `json:"cache"`
	Processed *int64 `json:"processed"`
	TimeMs    *int64 `json:"time_ms"`
}

// ReadNumber reads a number field: a json.Number (or float64) that is finite; nil when absent.
func ReadNumber(v any, where string) (*float64, error) {
	switch n := v.(type) {
	case nil:
		return nil, nil
	case json.Number:
		f, err := n.Float64()
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, Protocolf("%s is out of range", where)
		}
		return &f, nil
	case float64:
		if math.IsInf(n, 0) || math.IsNaN(n) {
			return nil, Protocolf("%s is out of range", where)
		}
		return &n, nil
	default:
		return nil, Protocolf("%s must be a number", where)
	}
}

// ReadInteger reads an integer field: integral (1.0 is 1: contract I1) and within ±(2^53-1)
// (I2), read exactly from the number's text; nil when absent.
func ReadInteger(v any, where string) (*int64, error) {
	if v == nil {
		return nil, nil
	}
	text := ""
	switch n := v.(type) {
	case json.Number:
		text = string(n)
	case float64:
		if _, err := ReadNumber(n, where); err != nil {
			return nil, err
		}
		text = big.NewFloat(n).Text('f', -1)
	default:
		return nil, Protocolf("%s must be an integer", where)
	}
	r, ok := new(big.Rat).SetString(strings.TrimSpace(text))
	if !ok {
		return nil, Protocolf("%s must be an integer", where)
	}
	if !r.IsInt() {
		return nil, Protocolf("%s must be an integer, not %s", where, text)
	}
	i := r.Num()
	if i.CmpAbs(big.NewInt(MaxSafeInteger)) > 0 {
		return nil, Protocolf("%s is out of range", where)
	}
	out := i.Int64()
	return &out, nil
}

// ReadTimings reads a chunk's "timings": all eleven fields, or nil when the chunk has none.
func ReadTimings(v any) (Timings, error) {
	if v == nil {
		return nil, nil
	}
	object, ok := v.(map[string]any)
	if !ok {
		return nil, Protocolf("timings must be an object")
	}
	t := Timings{}
	for _, name := range TimingsFields {
		n, err := ReadNumber(object[name], "timings."+name)
		if err != nil {
			return nil, err
		}
		t[name] = n
	}
	return t, nil
}

// ReadProgress reads a chunk's "prompt_progress" as the progress event, or nil.
func ReadProgress(v any) (*Progress, error) {
	if v == nil {
		return nil, nil
	}
	object, ok := v.(map[string]any)
	if !ok {
		return nil, Protocolf("prompt_progress must be an object")
	}
	p := &Progress{Type: "progress"}
	for name, into := range map[string]**int64{
		"total": &p.Total, "cache": &p.Cache, "processed": &p.Processed, "time_ms": &p.TimeMs,
	} {
		n, err := ReadInteger(object[name], "prompt_progress."+name)
		if err != nil {
			return nil, err
		}
		*into = n
	}
	return p, nil
}

// ReasoningState keeps timings, reasoning_tokens and in_reasoning (contract R3, R4).
type ReasoningState struct {
	Timings         Timings
	ReasoningTokens int
	InReasoning     bool
}

// TakeTimings keeps a chunk's timings (R4: before any of its text).
func (s *ReasoningState) TakeTimings(t Timings) {
	if t != nil {
		s.Timings = t
	}
}

// Saw updates the state for one event, by its type ("reasoning", "content", "tool_call_delta").
func (s *ReasoningState) Saw(eventType string) error {
	switch eventType {
	case "reasoning":
		s.InReasoning = true
		if s.Timings == nil || s.Timings["predicted_n"] == nil {
			return nil
		}
		n, err := ReadInteger(*s.Timings["predicted_n"], "timings.predicted_n")
		if err != nil {
			return err
		}
		if *n < 0 {
			return Protocolf("timings.predicted_n must be a non-negative integer")
		}
		s.ReasoningTokens = int(*n)
	case "content", "tool_call_delta":
		s.InReasoning = false
	}
	return nil
}
