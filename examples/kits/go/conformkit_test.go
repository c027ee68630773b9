package conformkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type event struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type completion struct {
	Content string `json:"content"`
}

// echo is a target that turns each payload into a content event; "boom" is a server error,
// "panic" panics, "oops" is an error of no kind.
type echo struct{ pushed []string }

func (e *echo) Push(data string) ([]event, error) {
	switch data {
	case "boom":
		return nil, &Error{Kind: "server", Message: "boom"}
	case "panic":
		panic("at the disco")
	case "oops":
		return nil, errors.New("oops")
	case "":
		return nil, nil
	}
	e.pushed = append(e.pushed, data)
	return []event{{"content", data}}, nil
}

func (e *echo) Finish(bool) (*completion, error) {
	return &completion{strings.Join(e.pushed, "")}, nil
}

func (e *echo) State() State { return State{} }

func run(t *testing.T, requests ...string) []map[string]any {
	t.Helper()
	s := NewSession(Hello{"echo", "1", "go"}, func() Target[event, *completion] { return &echo{} }, Options{})
	var out bytes.Buffer
	if err := ServeIO(strings.NewReader(strings.Join(requests, "\n")+"\n"), &out, s); err != nil {
		t.Fatal(err)
	}
	var replies []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("reply %q: %v", line, err)
		}
		replies = append(replies, r)
	}
	return replies
}

func kind(r map[string]any) string {
	e, _ := r["error"].(map[string]any)
	k, _ := e["kind"].(string)
	return k
}

func TestSession(t *testing.T) {
	r := run(t,
		`{"seq":1,"op":"hello","protocol":1}`,
		`{"seq":2,"op":"push","data":"x"}`,
		`{"seq":3,"op":"new"}`,
		`{"seq":4,"op":"push","data":"Hi"}`,
		`{"seq":5,"op":"push","data":""}`,
		`{"seq":6,"op":"push","data":"{\"x\":\"\ud800\"}"}`,
		`{"seq":7,"op":"push","data":"boom"}`,
		`{"seq":8,"op":"push","data":"panic"}`,
		`{"seq":9,"op":"push","data":"oops"}`,
		`{"seq":10,"op":"finish","thinking_capped":false}`,
		`{"seq":11,"op":"frobnicate"}`,
		`{"seq":12,"op":"bye"}`,
		`{"seq":13,"op":"hello","protocol":1}`,
	)
	if len(r) != 12 {
		t.Fatalf("%d replies, want 12 (nothing after bye): %v", len(r), r)
	}
	if r[0]["name"] != "echo" || r[0]["protocol"] != 1.0 {
		t.Errorf("hello: %v", r[0])
	}
	if kind(r[1]) != "bad_request" {
		t.Errorf("push before new: %v", r[1])
	}
	if ev := r[3]["events"].([]any); len(ev) != 1 {
		t.Errorf("push: %v", r[3])
	}
	if ev, ok := r[4]["events"].([]any); !ok || len(ev) != 0 {
		t.Errorf("no events is [], not null: %v", r[4])
	}
	for i, want := range map[int]string{5: "protocol", 6: "server", 7: "crash", 8: "crash", 10: "bad_request"} {
		if kind(r[i]) != want {
			t.Errorf("reply %d: want %s, got %v", i, want, r[i])
		}
	}
	if c := r[9]["completion"].(map[string]any); c["content"] != "Hi" {
		t.Errorf("finish: %v", r[9])
	}
	if r[11]["ok"] != true {
		t.Errorf("bye: %v", r[11])
	}
}

func number(text string) any { return json.Number(text) }

func TestGlue(t *testing.T) {
	for text, ok := range map[string]bool{
		"3": true, "3.0": true, "1e0": true, "9007199254740991": true, "-9007199254740991.0": true,
		"9007199254740992": false, "9007199254740993.0": false, "1e300": false, "1.5": false,
	} {
		_, err := ReadInteger(number(text), "x")
		if (err == nil) != ok {
			t.Errorf("ReadInteger(%s): err %v, want ok=%v", text, err, ok)
		}
	}
	if _, err := ReadNumber(number("1e400"), "x"); err == nil {
		t.Error("1e400 is out of range")
	}
	timings, err := ReadTimings(map[string]any{"predicted_n": number("1e300")})
	if err != nil || timings["draft_n"] != nil || len(timings) != 11 {
		t.Fatalf("ReadTimings: %v %v", timings, err)
	}
	var s ReasoningState
	s.TakeTimings(timings)
	if err := s.Saw("reasoning"); err == nil {
		t.Error("predicted_n 1e300 used for reasoning_tokens is a protocol error (R4, I2)")
	}
	p, err := ReadProgress(map[string]any{"total": number("36.0"), "cache": nil})
	if err != nil || *p.Total != 36 || p.Cache != nil {
		t.Errorf("ReadProgress: %v %v", p, err)
	}
	if _, err := ReadProgress("x"); err == nil {
		t.Error("prompt_progress must be an object")
	}
}
