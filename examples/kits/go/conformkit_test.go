package conformkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

type event struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type completion struct {
	Content string  `json:"content"`
	Score   float64 `json:"score"`
}

// echo is a target that turns each payload into a content event; "boom" is a server error,
// "panic" panics, "oops" is an error of no kind, and "nan" makes the completion's score NaN.
type echo struct {
	pushed []string
	score  float64
}

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
	case "nan":
		e.score = math.NaN()
		return nil, nil
	}
	e.pushed = append(e.pushed, data)
	return []event{{"content", data}}, nil
}

func (e *echo) Finish(bool) (*completion, error) {
	return &completion{strings.Join(e.pushed, ""), e.score}, nil
}

func (e *echo) State() State { return State{} }

func run(t *testing.T, requests ...string) []map[string]any {
	t.Helper()
	replies, err := serve(requests...)
	if err != nil {
		t.Fatal(err)
	}
	return replies
}

// serve answers `requests` (each a line, or a framed payload with its LF) with an echo session.
func serve(requests ...string) ([]map[string]any, error) {
	s := NewSession(Hello{"echo", "1", "go"}, func() Target[event, *completion] { return &echo{} }, Options{})
	var out bytes.Buffer
	err := ServeIO(strings.NewReader(strings.Join(requests, "\n")+"\n"), &out, s)
	var replies []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r map[string]any
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return replies, fmt.Errorf("reply %q: %v", line, err)
		}
		replies = append(replies, r)
	}
	return replies, err
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

// framed is a protocol-2 push of `payload` after its request line.
func framed(seq int, payload string) string {
	return fmt.Sprintf(`{"seq":%d,"op":"push","bytes":%d}`, seq, len(payload)) + "\n" + payload
}

func TestProtocol2(t *testing.T) {
	r := run(t,
		`{"seq":1,"op":"hello","protocol":1,"accept":[1,2,3,4],"shared":"/proc/self/fd/4"}`,
		`{"seq":2,"op":"new"}`,
		framed(3, "H\u00e9\n\"x\""),                         // a LF, a quote and a backslash inside: framed, not escaped
		`{"seq":4,"op":"push","data":"{\"x\":\"\ud800\"}"}`, // a lone surrogate still comes as "data"
		framed(5, "ignored"),
		`{"seq":6,"op":"finish","thinking_capped":false}`,
		`{"seq":7,"op":"new"}`,
		framed(8, "é"),
		framed(9, ""),
		`{"seq":10,"op":"push","data":"!"}`,
		framed(11, "nan"),
		`{"seq":12,"op":"finish","thinking_capped":true}`,
		framed(13, "late"),
		`{"seq":14,"op":"finish","thinking_capped":true}`,
		`{"seq":15,"op":"new"}`,
		framed(16, "boom"),
		framed(17, "after the error"),
		`{"seq":18,"op":"new"}`,
		framed(19, "panic"),
		`{"seq":20,"op":"finish","thinking_capped":false}`,
		`{"seq":21,"op":"bye"}`,
	)
	if len(r) != 21 {
		t.Fatalf("%d replies, want 21: %v", len(r), r)
	}
	for i, reply := range r {
		if reply["seq"] != float64(i+1) {
			t.Fatalf("reply %d answers seq %v", i+1, reply["seq"])
		}
	}
	if r[0]["protocol"] != 2.0 {
		t.Errorf("hello: %v", r[0])
	}
	if ev := r[2]["events"].([]any); ev[0].(map[string]any)["text"] != "H\u00e9\n\"x\"" {
		t.Errorf("framed push: %v", r[2])
	}
	for i, want := range map[int]string{3: "protocol", 15: "server", 18: "crash"} {
		if kind(r[i]) != want {
			t.Errorf("reply %d: want %s, got %v", i+1, want, r[i])
		}
	}
	for _, i := range []int{4, 5, 12, 13, 16, 19} {
		if len(r[i]) != 2 || r[i]["skipped"] != true {
			t.Errorf("reply %d: want skipped, got %v", i+1, r[i])
		}
	}
	c, _ := r[11]["completion"].(map[string]any)
	if c["content"] != "é!" || !reflect.DeepEqual(c["score"], map[string]any{"$number": "NaN"}) {
		t.Errorf("finish: want content é! and score {$number: NaN}, got %v", r[11])
	}
}

func TestProtocol1StaysAsItWas(t *testing.T) {
	r := run(t,
		`{"seq":1,"op":"hello","protocol":1}`,
		`{"seq":2,"op":"new"}`,
		`{"seq":3,"op":"push","data":"boom"}`,
		`{"seq":4,"op":"push","data":"x"}`,
		`{"seq":5,"op":"finish","thinking_capped":false}`,
		`{"seq":6,"op":"push","data":"y"}`,
		framed(7, "z"),
	)
	if r[0]["protocol"] != 1.0 {
		t.Errorf("hello without accept: %v", r[0])
	}
	// Version 1 plans nothing: every request reaches the assembler, as it always did.
	if r[3]["events"] == nil || r[4]["completion"] == nil || r[5]["events"] == nil {
		t.Errorf("version 1 skipped a request: %v", r)
	}
	if kind(r[6]) != "bad_request" {
		t.Errorf(`"bytes" is not version 1: %v`, r[6])
	}
	// NaN cannot be written in version 1: the program stops (the harness sees it crash).
	_, err := serve(`{"seq":1,"op":"hello","protocol":1}`, `{"seq":2,"op":"new"}`,
		`{"seq":3,"op":"push","data":"nan"}`, `{"seq":4,"op":"finish","thinking_capped":false}`)
	if err == nil || !strings.Contains(err.Error(), "unsupported value: NaN") {
		t.Errorf("NaN in version 1: %v", err)
	}
	if r := run(t, `{"seq":1,"op":"hello","protocol":3}`); kind(r[0]) != "bad_request" {
		t.Errorf("hello for protocol 3: %v", r[0])
	}
}

func TestMarkNumbers(t *testing.T) {
	type inner struct {
		X float64 `json:"x"`
	}
	type Embedded struct {
		E float32 `json:"e"`
	}
	type outer struct {
		Embedded
		In      *inner         `json:"in"`
		List    []float64      `json:"list"`
		Map     map[string]any `json:"map,omitempty"`
		Empty   []int          `json:"empty,omitempty"`
		Skipped float64        `json:"-"`
		Plain   string
		hidden  float64
	}
	v := outer{Embedded{float32(math.Inf(-1))}, &inner{math.Inf(1)}, []float64{1.5, math.NaN()}, nil, []int{}, math.NaN(), "p", 0}
	raw, err := json.Marshal(markNumbers(reflect.ValueOf(v)))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Plain":"p","e":{"$number":"-Infinity"},"in":{"x":{"$number":"Infinity"}},"list":[1.5,{"$number":"NaN"}]}`
	if string(raw) != want {
		t.Errorf("got  %s\nwant %s", raw, want)
	}
}
