package diagnose

import "testing"

// --fail-on: a finding fails the run exactly when its severity is at or
// above the threshold, for every code and every threshold.
func TestFailOnThresholdAtEachSeverity(t *testing.T) {
	thresholds := map[string]Severity{}
	for _, name := range []string{"info", "warning", "error"} {
		sev, err := ParseSeverity(name)
		if err != nil {
			t.Fatalf("ParseSeverity(%q): %v", name, err)
		}
		if sev.String() != name {
			t.Errorf("ParseSeverity(%q) = %s", name, sev)
		}
		thresholds[name] = sev
	}
	if !(thresholds["info"] < thresholds["warning"] && thresholds["warning"] < thresholds["error"]) {
		t.Fatalf("severities out of order: %v", thresholds)
	}
	for _, bad := range []string{"", "warn", "Error", "fatal", " info"} {
		if _, err := ParseSeverity(bad); err == nil {
			t.Errorf("ParseSeverity(%q) accepted", bad)
		}
	}

	for _, code := range Codes() {
		sum := newSummary()
		sum.add(Report{ID: "s", Findings: []Finding{{Code: code, Severity: code.Severity(), SessionID: "s"}}})
		for name, threshold := range thresholds {
			want := 0
			if code.Severity() >= threshold {
				want = 1
			}
			if got := sum.AtOrAbove(threshold); got != want {
				t.Errorf("%s (%s) with --fail-on %s: %d finding(s) at or above, want %d", code, code.Severity(), name, got, want)
			}
		}
	}

	// Counts add up across severities: 1 error, 2 warnings, 3 info.
	sum := newSummary()
	for sev, n := range map[Severity]int{Error: 1, Warning: 2, Info: 3} {
		for range n {
			sum.add(Report{Findings: []Finding{{Severity: sev}}})
		}
	}
	for name, want := range map[string]int{"error": 1, "warning": 3, "info": 6} {
		if got := sum.AtOrAbove(thresholds[name]); got != want {
			t.Errorf("--fail-on %s over 1 error, 2 warnings, 3 info: %d, want %d", name, got, want)
		}
	}
	// No findings never fail.
	if n := newSummary().AtOrAbove(Info); n != 0 {
		t.Errorf("an empty audit counts %d findings", n)
	}
}
