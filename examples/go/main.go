// Command conform-go is an assembler for llama-server's streamed chat completions that speaks
// conform's line protocol (docs/protocol.md) on standard input and output. The loop is the adapter
// kit's (examples/kits/go): this file only says what to call.
package main

import (
	"errors"

	"conform.example/conformkit"
)

// target is what the kit calls for one case.
type target struct{ asm *Assembler }

func (t target) Push(data string) ([]Event, error) {
	events, err := t.asm.Push(data)
	return events, kitError(err)
}

func (t target) Finish(thinkingCapped bool) (*Completion, error) {
	completion, err := t.asm.Finish(thinkingCapped)
	return completion, kitError(err)
}

func (t target) State() conformkit.State {
	a := t.asm
	return conformkit.State{ID: a.ID(), ReasoningTokens: a.ReasoningTokens(), InReasoning: a.InReasoning(), IsFinished: a.IsFinished()}
}

// kitError hands the assembler's own error to the kit as one of its kinds.
func kitError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return &conformkit.Error{Kind: string(e.Kind), Message: e.Message}
	}
	return err
}

// pitfallOmitEmptyReply is the natural single reply type, used only under CONFORM_GO_PITFALL=omitempty:
// `omitempty` drops an empty slice too, so a push with no events loses its "events" field, which the
// protocol makes garbage.
type pitfallOmitEmptyReply struct {
	Seq    *int64            `json:"seq"`
	Events []Event           `json:"events,omitempty"`
	State  *conformkit.State `json:"state,omitempty"`
}

func main() {
	var options conformkit.Options
	if pitfall("omitempty") {
		options.PushReply = func(seq *int64, events any, state conformkit.State) any {
			list, _ := events.([]Event)
			return pitfallOmitEmptyReply{Seq: seq, Events: list, State: &state}
		}
	}
	hello := conformkit.Hello{Name: "conform-go-example", Version: "0.1.0", Language: "go"}
	conformkit.Serve(hello, func() conformkit.Target[Event, *Completion] { return target{&Assembler{}} }, options)
}
