package projcache_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// countUnit counts every event; it declares no event types, so it reads all.
type countUnit struct{ ver int }

func (u countUnit) Key() string                                   { return "count" }
func (u countUnit) StateVersion() int                             { return u.ver }
func (countUnit) Init() json.RawMessage                           { return json.RawMessage(`0`) }
func (countUnit) View(s json.RawMessage) (json.RawMessage, error) { return s, nil }
func (countUnit) Apply(s json.RawMessage, _ session.Event) (json.RawMessage, error) {
	n, err := strconv.Atoi(string(s))
	if err != nil {
		return nil, err
	}
	return json.RawMessage(strconv.Itoa(n + 1)), nil
}

// trapUnit fails on event type "x/fail", panics on "x/panic" and returns a
// state that is not JSON on "x/garbage".
type trapUnit struct{}

func (trapUnit) Key() string                                     { return "trap" }
func (trapUnit) StateVersion() int                               { return 1 }
func (trapUnit) Init() json.RawMessage                           { return json.RawMessage(`"ok"`) }
func (trapUnit) View(s json.RawMessage) (json.RawMessage, error) { return s, nil }
func (trapUnit) EventTypes() []string                            { return []string{"x/fail", "x/panic", "x/garbage"} }
func (trapUnit) Apply(s json.RawMessage, e session.Event) (json.RawMessage, error) {
	switch e.Type {
	case "x/fail":
		return nil, errors.New("cannot fold x/fail")
	case "x/panic":
		var m map[string]int
		//lint:ignore SA5000 the trap must panic the way a buggy unit does, with a runtime error
		m["boom"]++ // a nil-map write: a real bug, not a deliberate panic call
	case "x/garbage":
		return json.RawMessage(`{not json`), nil
	}
	return s, nil
}

func registry(t *testing.T, units ...projcache.Unit) *projcache.Registry {
	t.Helper()
	reg := projcache.NewRegistry()
	if err := subagent.RegisterUnit(reg); err != nil {
		t.Fatal(err)
	}
	for _, u := range units {
		if err := reg.Register(u); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// events builds a log: each item is a type, or "type=data".
func events(items ...string) []session.Event {
	out := make([]session.Event, len(items))
	for i, it := range items {
		typ, data, found := strings.Cut(it, "=")
		if !found {
			data = `{}`
		}
		out[i] = session.Event{Type: typ, Seq: int64(i), Time: 1, Data: json.RawMessage(data)}
	}
	return out
}

const descA = `subagent/descriptor={"version":2,"mode":"continuable","provider":"spawn","label":"a"}`

func TestRegister(t *testing.T) {
	reg := registry(t, countUnit{ver: 1})
	if err := reg.Register(countUnit{ver: 1}); err != nil {
		t.Fatalf("same key, same version: %v", err)
	}
	err := reg.Register(countUnit{ver: 2})
	if err == nil || !strings.Contains(err.Error(), `"count"`) {
		t.Fatalf("same key, other version: %v", err)
	}
	if got := reg.Keys(); !reflect.DeepEqual(got, []string{"subagent", "count"}) {
		t.Fatalf("keys %v", got)
	}
	if v, ok := reg.StateVersion("count"); !ok || v != 1 {
		t.Fatalf("StateVersion(count) = %d, %v", v, ok)
	}
	if err := subagent.RegisterUnit(reg); err != nil {
		t.Fatalf("subagent registered twice: %v", err)
	}
}

func TestEventTypes(t *testing.T) {
	types, ok := registry(t, trapUnit{}).EventTypes()
	if !ok || !reflect.DeepEqual(types, []string{"subagent/descriptor", "x/fail", "x/garbage", "x/panic"}) {
		t.Fatalf("typed units: %v, %v", types, ok)
	}
	if _, ok := registry(t, countUnit{ver: 1}).EventTypes(); ok {
		t.Fatal("a unit that reads every event must make EventTypes report false")
	}
}

func TestRestore(t *testing.T) {
	reg := registry(t, countUnit{ver: 1})
	snap, err := reg.Restore(events("turn/start", descA, "turn/end"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"subagent": `{"mode":"continuable","label":"a","seq":1}`, "count": `3`}
	if snap.AsOfSeq != 2 || len(snap.Values) != 2 || string(snap.Values["subagent"]) != want["subagent"] || string(snap.Values["count"]) != want["count"] {
		t.Fatalf("snapshot %d %s", snap.AsOfSeq, snap.Values)
	}
	empty, err := reg.Restore(nil)
	if err != nil || empty.AsOfSeq != -1 || string(empty.Values["subagent"]) != "null" || string(empty.Values["count"]) != "0" {
		t.Fatalf("empty log: %d %s %v", empty.AsOfSeq, empty.Values, err)
	}
}

// TestFoldIncremental: folding in batches, as a writer does after each
// append, gives the same snapshot and checkpoint as one restore.
func TestFoldIncremental(t *testing.T) {
	reg := registry(t, countUnit{ver: 1})
	log := events("turn/start", "user/message", descA, "step/start", "turn/end")
	f := reg.NewFold()
	f.Apply(log[:2]...)
	f.Apply(log[2:]...)
	got, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := reg.Restore(log)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("incremental %v, restore %v", got, want)
	}
	cp, err := f.Checkpoint()
	if err != nil || f.Err() != nil {
		t.Fatal(err, f.Err())
	}
	wantCP := projcache.Checkpoint{
		"subagent": {Ver: 2, Seq: 4, Val: json.RawMessage(`{"identity":{"mode":"continuable","label":"a","seq":2}}`)},
		"count":    {Ver: 1, Seq: 4, Val: json.RawMessage(`5`)},
	}
	if !reflect.DeepEqual(cp, wantCP) {
		t.Fatalf("checkpoint %v", cp)
	}
}

// TestUnitFailures: an error, a panic or a non-JSON state fails that unit
// only, as a *UnitError; the other units keep folding.
func TestUnitFailures(t *testing.T) {
	for _, c := range []struct{ typ, msg string }{
		{"x/fail", "cannot fold x/fail"},
		{"x/panic", "panic: assignment to entry in nil map"},
	} {
		t.Run(c.typ, func(t *testing.T) {
			reg := registry(t, trapUnit{}, countUnit{ver: 1})
			f := reg.NewFold()
			f.Apply(events("turn/start", c.typ)...)
			if f.Err() == nil {
				t.Fatal("a live fold does not report the failure")
			}
			snap, err := reg.Restore(events("turn/start", c.typ, descA))
			var ue *projcache.UnitError
			if !errors.As(err, &ue) || ue.Key != "trap" || !strings.Contains(ue.Error(), c.msg) {
				t.Fatalf("error %v, want trap's %q", err, c.msg)
			}
			if _, present := snap.Values["trap"]; present {
				t.Fatal("failed unit has a value")
			}
			if string(snap.Values["count"]) != "3" || string(snap.Values["subagent"]) != `{"mode":"continuable","label":"a","seq":2}` {
				t.Fatalf("healthy units: %s", snap.Values)
			}
		})
	}
	t.Run("panic in the last unit", func(t *testing.T) {
		snap, err := registry(t, trapUnit{}).Restore(events("x/panic", descA))
		if err == nil || snap.AsOfSeq != 1 || string(snap.Values["subagent"]) != `{"mode":"continuable","label":"a","seq":1}` {
			t.Fatalf("snapshot %d %s, %v", snap.AsOfSeq, snap.Values, err)
		}
	})
	t.Run("x/garbage", func(t *testing.T) {
		f := registry(t, trapUnit{}).NewFold()
		f.Apply(events("x/garbage", descA)...)
		cp, err := f.Checkpoint()
		var ue *projcache.UnitError
		if !errors.As(err, &ue) || ue.Key != "trap" || !strings.Contains(err.Error(), "state is not JSON") {
			t.Fatalf("error %v", err)
		}
		if _, present := cp["trap"]; present || len(cp) != 1 {
			t.Fatalf("checkpoint %v", cp)
		}
	})
}

func TestViewCheckpoint(t *testing.T) {
	reg := registry(t, countUnit{ver: 1})
	values, dropped := reg.ViewCheckpoint(projcache.Checkpoint{
		"subagent": {Ver: 2, Seq: 3, Val: json.RawMessage(`{"identity":{"mode":"one-shot","seq":3}}`)},
		"count":    {Ver: 7, Seq: 3, Val: json.RawMessage(`4`)},
		"gone":     {Ver: 1, Seq: 3, Val: json.RawMessage(`1`)},
	})
	if len(values) != 1 || string(values["subagent"]) != `{"mode":"one-shot","seq":3}` {
		t.Fatalf("values %s", values)
	}
	if dropped["count"] != "state version 7, registered 1" || dropped["gone"] != "no registered unit" {
		t.Fatalf("dropped %v", dropped)
	}
	_, dropped = reg.ViewCheckpoint(projcache.Checkpoint{
		"subagent": {Ver: 2, Seq: 3, Val: json.RawMessage(`{"identity":{"mode":"continuable","seq":3}}`)},
	})
	if !strings.Contains(dropped["subagent"], "must have a label") {
		t.Fatalf("an invalid stored state must be dropped: %v", dropped)
	}
}

// RestoreView folds and judges every unit as Restore does and keeps one
// view: the same error (a foreign unit's failure included) and key's view.
func TestRestoreViewMatchesRestore(t *testing.T) {
	for _, log := range [][]string{
		{"turn/start", descA},
		{"turn/start", "x/fail", descA},
		{"x/panic", descA},
		{"x/garbage", descA},
		{"turn/start"},
	} {
		reg := registry(t, trapUnit{}, countUnit{ver: 1})
		snap, err := reg.Restore(events(log...))
		for _, key := range []string{"subagent", "trap", "count", "none"} {
			view, viewErr := reg.RestoreView(events(log...), key)
			if fmt.Sprint(viewErr) != fmt.Sprint(err) || string(view) != string(snap.Values[key]) || (view == nil) != (snap.Values[key] == nil) {
				t.Fatalf("%v %s: RestoreView %s, %v; Restore %s, %v", log, key, view, viewErr, snap.Values[key], err)
			}
		}
	}
}
