package main

import (
	"testing"
)

func TestColorEnabled(t *testing.T) {
	for _, tt := range []struct {
		name    string
		env     map[string]string
		noColor bool
		tty     bool
		want    bool
	}{
		{"terminal", nil, false, true, true},
		{"pipe", nil, false, false, false},
		{"CLICOLOR_FORCE on a pipe", map[string]string{"CLICOLOR_FORCE": "1"}, false, false, true},
		{"CLICOLOR_FORCE=0", map[string]string{"CLICOLOR_FORCE": "0"}, false, false, false},
		{"NO_COLOR beats CLICOLOR_FORCE", map[string]string{"NO_COLOR": "1", "CLICOLOR_FORCE": "1"}, false, true, false},
		{"NO_COLOR empty is unset", map[string]string{"NO_COLOR": ""}, false, true, true},
		{"--no-color", nil, true, true, false},
		{"--no-color beats CLICOLOR_FORCE", map[string]string{"CLICOLOR_FORCE": "1"}, true, true, false},
		{"TERM=dumb", map[string]string{"TERM": "dumb"}, false, true, false},
		{"TERM=dumb beats CLICOLOR_FORCE", map[string]string{"TERM": "dumb", "CLICOLOR_FORCE": "1"}, false, true, false},
	} {
		got := colorEnabled(&config{NoColor: tt.noColor}, tt.tty, func(k string) string { return tt.env[k] })
		if got != tt.want {
			t.Errorf("%s: colour %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestUTF8Locale(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"LANG": "en_US.UTF-8"}, true},
		{map[string]string{"LANG": "C.utf8"}, true},
		{map[string]string{"LANG": "C"}, false},
		{map[string]string{"LC_CTYPE": "de_DE.UTF-8", "LANG": "C"}, true},
		{map[string]string{"LC_ALL": "C", "LC_CTYPE": "de_DE.UTF-8"}, false},
		{map[string]string{"LC_ALL": "", "LANG": "fr_FR.UTF-8"}, true},
	} {
		if got := utf8Locale(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("%v: UTF-8 %v, want %v", tt.env, got, tt.want)
		}
	}
}

func TestClosestKey(t *testing.T) {
	settings := (&config{}).settings("/db")
	for key, want := range map[string]string{
		"maxdepht":         "maxDepth",
		"busytimeout":      "busyTimeoutMs",
		"lease.ttl":        "lease.ttlMs",
		"colour":           "",
		"cache.writeevery": "",
	} {
		if got := closestKey(key, settings); got != want {
			t.Errorf("closestKey(%q) = %q, want %q", key, got, want)
		}
	}
}
