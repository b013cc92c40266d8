package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/report"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

// DSH's recorded cold resumes (expected.json's resume.<id>): after `dsh
// import` of each form of an oracle corpus, for every child DSH resumed,
// dsh rebuilds the same descriptor (resumeDescriptor), and `dsh resume`
// refuses exactly where DSH refused, with DSH's code and exact message, and
// otherwise runs the follow-up turn with DSH's turn number and, where DSH's
// turn completed, DSH's exact turn/end data.
//
// Two differences come from DSH's recording runtime, not from resume, and
// are not reproduced:
//   - it had no default model, so a child whose descriptor records no
//     agentProvider/agentModel ended its follow-up in error ("has no
//     provider/model"); dsh runs such a child on its offline echo route
//     (subagent.ResumeRequest), so that turn completes, with DSH's number;
//   - it had no global tools registered, so a descriptor whose toolFilter
//     names tools failed there for that reason alone; for such a child only
//     dsh's acceptance of the resume is checked.
//
// appendedEvents counts what DSH's scripted model streamed and is not
// compared: the number of events a turn appends depends on the model.
func TestResumeMatchesDSHRecordedResumes(t *testing.T) {
	isolateEnv(t)
	ctx := context.Background()
	checked := 0
	for _, name := range dshfixtures.OracleCorpora {
		o := dshfixtures.LoadOracle(t, name)
		if len(o.Resume) == 0 {
			continue
		}
		sources := map[string]string{
			"sqlite": "dsh-sqlite:" + filepath.Join(o.Dir, o.Files.SQLite),
			"jsonl":  "jsonl:" + filepath.Join(o.Dir, o.Files.JSONL),
		}
		if o.Files.JSONLPlain != "" {
			sources["jsonl-plain"] = "jsonl:" + filepath.Join(o.Dir, o.Files.JSONLPlain)
		}
		ids := make([]string, 0, len(o.Resume))
		for id := range o.Resume {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for v, src := range sources {
			db := filepath.Join(t.TempDir(), "dsh.db")
			if out, errOut, code := runDsh(t, "--db", db, "import", src, "--quiet"); code != 0 {
				t.Fatalf("%s: import %s: exit %d\n%s%s", name, src, code, out, errOut)
			}
			parents := resumeParents(ctx, t, db, ids)
			for _, id := range ids {
				want := o.Resume[id]
				what := name + " " + v + " " + id
				checkResumeDescriptor(ctx, t, what, db, id, want.ResumeDescriptor.Descriptor)
				checkFollowup(ctx, t, what, db, id, parents[id], want)
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no recorded resume was checked")
	}
	t.Logf("%d recorded resumes checked", checked)
}

// resumeParents reads each child's parentSession: the session DSH's
// send_message came from.
func resumeParents(ctx context.Context, t *testing.T, db string, ids []string) map[string]string {
	t.Helper()
	s, err := sqlitepersist.OpenReadOnly(ctx, db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	parents := map[string]string{}
	for _, id := range ids {
		h, err := s.Header(ctx, id)
		if err != nil {
			t.Fatalf("header of %s: %v", id, err)
		}
		parents[id] = h.Parent()
	}
	return parents
}

// checkResumeDescriptor compares the first descriptor of the imported
// child's own events, as dsh parses and writes it, with DSH's.
func checkResumeDescriptor(ctx context.Context, t *testing.T, what, db, id string, want json.RawMessage) {
	t.Helper()
	s, err := sqlitepersist.OpenReadOnly(ctx, db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in, err := s.Inspect(ctx, id)
	if err != nil {
		t.Fatalf("%s: inspect: %v", what, err)
	}
	cut := in.Header.InheritedCut()
	for _, e := range in.Events {
		if e.Type != session.TypeDescriptor || !subagent.OwnSuffix(e.Seq, cut) {
			continue
		}
		d, err := subagent.ParseDescriptor(e.Data)
		if err != nil || d == nil {
			t.Errorf("%s: descriptor at seq %d: %v", what, e.Seq, err)
			return
		}
		got, err := d.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(dshfixtures.JSONTokens(t, got), dshfixtures.JSONTokens(t, want)) {
			t.Errorf("%s: resume descriptor\n got %s\nwant %s", what, got, want)
		}
		return
	}
	t.Errorf("%s: no descriptor in the child's own events; DSH resumed from %s", what, want)
}

func checkFollowup(ctx context.Context, t *testing.T, what, db, id, parent string, want dshfixtures.Resume) {
	t.Helper()
	out, errOut, code := runDsh(t, "--db", db, "resume", id, "--parent", parent, "--message", "one more thing", "-o", "json")
	f := want.Followup
	if !f.OK {
		if f.Error == nil {
			t.Fatalf("%s: expected.json records a failed follow-up without an error", what)
		}
		wantCode := exitCodes[dsherr.Code(f.Error.Code)]
		// DSH's advice to its model ("do not retry send_message …") is
		// worded for a shell user instead; what precedes it is DSH's.
		wantMsg, _, reworded := strings.Cut(f.Error.Message, "; do not retry send_message")
		var got report.ErrorDoc
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != wantCode || got.Error.Code != f.Error.Code ||
			!strings.HasPrefix(got.Error.Message, wantMsg) || (!reworded && got.Error.Message != wantMsg) {
			t.Errorf("%s: dsh resume exit %d\n%s%s\nwant exit %d and DSH's refusal\n%s %s", what, code, out, errOut, wantCode, f.Error.Code, f.Error.Message)
		}
		return
	}
	if code != 0 {
		t.Errorf("%s: dsh resume exit %d (%s), DSH resumed it", what, code, errOut)
		return
	}
	var desc struct {
		AgentProvider *string `json:"agentProvider"`
		ToolFilter    *struct {
			Tools []string `json:"tools"`
		} `json:"toolFilter"`
	}
	if err := json.Unmarshal(want.ResumeDescriptor.Descriptor, &desc); err != nil {
		t.Fatal(err)
	}
	if desc.ToolFilter != nil && len(desc.ToolFilter.Tools) > 0 {
		t.Logf("%s: toolFilter names tools; DSH's recording runtime had none registered, only acceptance is compared", what)
		return
	}
	var doc struct {
		Turn int64 `json:"turn"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%s: resume output %q: %v", what, out, err)
	}
	var dshEnd struct {
		Turn   int64 `json:"turn"`
		Reason struct {
			Kind  string `json:"kind"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		} `json:"reason"`
	}
	if err := json.Unmarshal(f.LastTurnEnd, &dshEnd); err != nil {
		t.Fatalf("%s: lastTurnEnd %s: %v", what, f.LastTurnEnd, err)
	}
	if doc.Turn != dshEnd.Turn {
		t.Errorf("%s: dsh ran turn %d, DSH turn %d", what, doc.Turn, dshEnd.Turn)
	}
	end := lastTurnEnd(ctx, t, db, id)
	if dshEnd.Reason.Kind != "completed" && desc.AgentProvider == nil {
		// DSH's runtime had no default model (see above): dsh's echo turn
		// completes where DSH's failed.
		t.Logf("%s: DSH's follow-up ended %s (%+v); dsh's ended %s", what, dshEnd.Reason.Kind, dshEnd.Reason.Error, end)
		want := `{"turn":` + jsonNumber(dshEnd.Turn) + `,"reason":{"kind":"completed"}}`
		if string(end) != want {
			t.Errorf("%s: turn/end %s, want %s", what, end, want)
		}
		return
	}
	if !slices.Equal(dshfixtures.JSONTokens(t, end), dshfixtures.JSONTokens(t, f.LastTurnEnd)) {
		t.Errorf("%s: turn/end %s, DSH's %s", what, end, f.LastTurnEnd)
	}
}

// lastTurnEnd is the data of the last turn/end in child id's log.
func lastTurnEnd(ctx context.Context, t *testing.T, db, id string) json.RawMessage {
	t.Helper()
	s, err := sqlitepersist.OpenReadOnly(ctx, db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in, err := s.Inspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(in.Events) - 1; i >= 0; i-- {
		if in.Events[i].Type == session.TypeTurnEnd {
			return in.Events[i].Data
		}
	}
	t.Fatalf("%s has no turn/end", id)
	return nil
}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
