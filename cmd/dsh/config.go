package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/dsh-project/dsh/internal/boundedfile"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/render"
)

// config is dsh's effective configuration. Each value comes from the first
// layer that sets it: a command-line flag, an environment variable DSH_*, the
// config file, or the built-in default.
type config struct {
	// DB is the database: an absolute SQLite path, or a PostgreSQL URL or
	// keyword/value string as given (location.ParseDB).
	DB          location.Spec
	BusyTimeout time.Duration
	// Output is the preferred output format; "" lets each command use its
	// own default. A command that cannot print this format ignores it.
	Output  string
	NoColor bool
	Cache   struct {
		// WriteEveryEvents and WriteInterval bound how stale a live session's
		// projection checkpoint may get: whichever comes first triggers a write.
		WriteEveryEvents int
		WriteInterval    time.Duration
	}
	// DSHCompat is whose listing rules list and diagnose follow.
	DSHCompat dshcompat.Profile
	// MaxDepth is the delegation depth limit for starting children.
	MaxDepth int
	// ColdConcurrency bounds parallel cold reads while listing.
	ColdConcurrency int
	Lease           struct {
		TTL       time.Duration
		Heartbeat time.Duration
	}

	// fileText is the config file's content, once read.
	fileText []byte
	// File is the config file consulted ("" when there is none to look at);
	// FileLoaded says whether it existed and was read.
	File       string
	FileLoaded bool
	// Sources lists every setting with its value and the layer it came
	// from, in declaration order (what `dsh config` prints).
	Sources []configSource
}

// configSource is one resolved setting, as `dsh config` reports it.
type configSource struct {
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Source string `json:"source"`
	Env    string `json:"env"`
}

// setting declares one configuration key. Adding a key is one entry in
// (*config).settings.
type setting struct {
	key string // as written in the config file, dotted for nesting
	// flag is the global flag bound to the key, "" when only the other
	// layers set it.
	flag string
	// env is the environment variable bound to the key, "" for the usual
	// DSH_ + upper snake case (see envVar).
	env    string
	target target
	def    any
}

// envVar is the environment variable that sets s.
func (s setting) envVar() string {
	if s.env != "" {
		return s.env
	}
	return envName(s.key)
}

// target parses a raw value (a string from a flag or the environment, a
// YAML scalar from the file) into a config field.
type target interface {
	set(raw any) error
	value() any
}

func (c *config) settings(defaultDB string) []setting {
	return []setting{
		{key: "db", flag: "db", target: dbTarget{&c.DB}, def: defaultDB},
		{key: "busyTimeoutMs", target: msTarget{&c.BusyTimeout, 0}, def: 5000},
		{key: "output", target: formatTarget{&c.Output}, def: ""},
		{key: "noColor", flag: "no-color", target: boolTarget{&c.NoColor}, def: false},
		{key: "cache.writeEveryEvents", target: intTarget{&c.Cache.WriteEveryEvents, 1}, def: 200},
		{key: "cache.writeIntervalMs", target: msTarget{&c.Cache.WriteInterval, 1}, def: 5000},
		// DSH_COMPAT, not DSH_DSH_COMPAT: the issue and the docs name it so.
		{key: "dshCompat", flag: "dsh-compat", env: "DSH_COMPAT", target: profileTarget{&c.DSHCompat}, def: string(dshcompat.Default)},
		{key: "maxDepth", target: intTarget{&c.MaxDepth, 0}, def: 2},
		{key: "coldConcurrency", target: intTarget{&c.ColdConcurrency, 1}, def: 4},
		{key: "lease.ttlMs", target: msTarget{&c.Lease.TTL, 1}, def: 5000},
		{key: "lease.heartbeatMs", target: msTarget{&c.Lease.Heartbeat, 1}, def: 1000},
	}
}

// envName is the environment variable bound to a key: DSH_ followed by the
// key in upper snake case (cache.writeEveryEvents → DSH_CACHE_WRITE_EVERY_EVENTS).
func envName(key string) string {
	var b strings.Builder
	b.WriteString("DSH_")
	prevLower := false
	for _, r := range key {
		switch {
		case r == '.':
			b.WriteByte('_')
			prevLower = false
		case unicode.IsUpper(r):
			if prevLower {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			prevLower = false
		default:
			b.WriteRune(unicode.ToUpper(r))
			prevLower = true
		}
	}
	return b.String()
}

const configEnv = "DSH_CONFIG"

// xdgDir returns $<name> when it is an absolute path, else $HOME/<fallback>;
// the XDG base directory spec says relative values are to be ignored.
func xdgDir(name, fallback string) string {
	if d := os.Getenv(name); filepath.IsAbs(d) {
		return d
	}
	if home := os.Getenv("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, fallback)
	}
	return ""
}

func defaultConfigFile() string {
	if d := xdgDir("XDG_CONFIG_HOME", ".config"); d != "" {
		return filepath.Join(d, "dsh", "config.yaml")
	}
	return ""
}

func defaultDB() string {
	if d := xdgDir("XDG_DATA_HOME", filepath.Join(".local", "share")); d != "" {
		return filepath.Join(d, "dsh", "dsh.db")
	}
	return ""
}

// loadConfig resolves every setting. flags holds the global flags; a flag
// counts only when it was given on the command line (Changed), never through
// its default. warn receives non-fatal problems (unknown keys in the file).
func loadConfig(flags *pflag.FlagSet, warn func(string)) (*config, error) {
	c := &config{}
	settings := c.settings(defaultDB())
	v := viper.New()
	for _, s := range settings {
		v.SetDefault(s.key, s.def)
		if err := v.BindEnv(s.key, s.envVar()); err != nil {
			return nil, fmt.Errorf("bind %s: %w", s.key, err)
		}
	}

	fileSource, err := c.readFile(v, flags, warn)
	if err != nil {
		return nil, err
	}
	if c.FileLoaded {
		if err := c.checkSections(v, settings, fileSource); err != nil {
			return nil, err
		}
		c.warnUnknownKeys(v, settings, warn)
	}
	c.Sources = append(c.Sources, configSource{Key: "config", Value: c.File, Source: fileSource, Env: configEnv})

	for _, s := range settings {
		raw, source := v.Get(s.key), "default"
		env := s.envVar()
		switch {
		case s.flag != "" && flags.Changed(s.flag):
			raw, source = flags.Lookup(s.flag).Value.String(), "flag --"+s.flag
		case os.Getenv(env) != "":
			source = "env " + env
		case s.key == "noColor" && os.Getenv("NO_COLOR") != "":
			// https://no-color.org: any non-empty NO_COLOR disables colour.
			raw, source = true, "env NO_COLOR"
		case v.InConfig(s.key):
			source = "file"
		}
		if err := s.target.set(raw); err != nil {
			return nil, dsherr.New(dsherr.InvalidInput, "config %s (%s): %v", s.key, source, err)
		}
		c.Sources = append(c.Sources, configSource{Key: s.key, Value: s.target.value(), Source: source, Env: env})
	}
	if c.Lease.Heartbeat >= c.Lease.TTL {
		return nil, dsherr.New(dsherr.InvalidInput,
			"config lease.heartbeatMs (%d) must be smaller than lease.ttlMs (%d): a holder must renew before its lease expires",
			c.Lease.Heartbeat.Milliseconds(), c.Lease.TTL.Milliseconds())
	}
	return c, nil
}

// checkSections refuses a file that gives a section of nested settings
// (cache, lease) a plain value: the mistake is the file's key, and blaming
// the setting's default instead would send the user looking elsewhere.
func (c *config) checkSections(v *viper.Viper, settings []setting, source string) error {
	spelled := originalKeys(c.fileText)
	for _, s := range settings {
		section, _, nested := strings.Cut(s.key, ".")
		if !nested || !v.InConfig(section) {
			continue
		}
		if _, ok := v.Get(section).(map[string]any); ok {
			continue
		}
		name := section
		if orig, ok := spelled[strings.ToLower(section)]; ok {
			name = orig
		}
		return dsherr.New(dsherr.InvalidInput, "config file %s (%s): %s: %v is not a section: put its settings under it (such as %s)",
			c.File, source, name, v.Get(section), s.key)
	}
	return nil
}

// warnUnknownKeys reports every key in the config file that is not a
// setting, spelled as the file spells it (viper folds keys to lower case),
// with the setting it most likely meant when exactly one is close.
func (c *config) warnUnknownKeys(v *viper.Viper, settings []setting, warn func(string)) {
	known := make(map[string]string, len(settings))
	for _, s := range settings {
		known[strings.ToLower(s.key)] = s.key
	}
	spelled := originalKeys(c.fileText)
	for _, k := range v.AllKeys() {
		if _, ok := known[k]; ok || !v.InConfig(k) {
			continue
		}
		name := k
		if orig, ok := spelled[k]; ok {
			name = orig
		}
		msg := fmt.Sprintf("config file %s: unknown key %q ignored", c.File, name)
		if guess := closestKey(k, settings); guess != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", guess)
		}
		warn(msg)
	}
}

// maxConfigBytes bounds a config file: a few settings fit in far less, and
// a larger file is refused with that reason.
const maxConfigBytes = 1 << 20

// originalKeys maps each leaf key of a YAML (or JSON) config file's text,
// dotted and lower-cased as viper reports it, to its spelling in the file.
// Text that does not parse as YAML yields an empty map.
func originalKeys(b []byte) map[string]string {
	out := map[string]string{}
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return out
	}
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		if n.Kind != yaml.MappingNode {
			if prefix != "" {
				out[strings.ToLower(prefix)] = prefix
			}
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			if prefix != "" {
				key = prefix + "." + key
			}
			walk(n.Content[i+1], key)
		}
	}
	walk(doc.Content[0], "")
	return out
}

// closestKey is the setting key within two edits of key (ignoring case), if
// exactly one is that close; "" otherwise.
func closestKey(key string, settings []setting) string {
	best, bestDist, ties := "", 3, 0
	for _, s := range settings {
		d := editDistance(key, strings.ToLower(s.key))
		switch {
		case d < bestDist:
			best, bestDist, ties = s.key, d, 0
		case d == bestDist:
			ties++
		}
	}
	if ties > 0 {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// readFile loads the config file into v and returns where its path came
// from. A missing default file is normal, and one that cannot be read (dsh
// run as another user with the same HOME) is a warning: the user did not
// ask for it. A file the user named (flag or DSH_CONFIG) must exist and be
// readable, and any file that is read must parse.
func (c *config) readFile(v *viper.Viper, flags *pflag.FlagSet, warn func(string)) (string, error) {
	source, explicit := "default", true
	switch {
	case flags.Changed("config"):
		c.File, source = flags.Lookup("config").Value.String(), "flag --config"
	case os.Getenv(configEnv) != "":
		c.File, source = os.Getenv(configEnv), "env "+configEnv
	default:
		c.File, explicit = defaultConfigFile(), false
	}
	if c.File == "" {
		if explicit {
			return "", dsherr.New(dsherr.Usage, "--config: empty file name")
		}
		return "default (no home directory)", nil
	}
	if _, err := os.Stat(c.File); errors.Is(err, fs.ErrNotExist) && !explicit {
		return "default (absent)", nil
	}
	// Read here, not by viper: only a regular file, and at most
	// maxConfigBytes of it (a FIFO or /dev/zero named by mistake must not
	// hang dsh or fill its memory). The read is bounded, so it needs no
	// cancellation of its own.
	text, err := boundedfile.Read(context.Background(), c.File, maxConfigBytes)
	if err != nil && !explicit {
		warn(fmt.Sprintf("default config file ignored: %v", err))
		return "default (unreadable)", nil
	}
	if err != nil {
		code := dsherr.InvalidInput
		if errors.Is(err, fs.ErrNotExist) {
			code = dsherr.Usage
		}
		return "", dsherr.Wrap(code, err, "config file %s (%s)", c.File, source)
	}
	v.SetConfigFile(c.File)
	typ := strings.TrimPrefix(filepath.Ext(c.File), ".")
	if typ == "" {
		typ = "yaml"
	}
	v.SetConfigType(typ)
	if err := v.ReadConfig(bytes.NewReader(text)); err != nil {
		return "", dsherr.Wrap(dsherr.InvalidInput, err, "config file %s (%s)", c.File, source)
	}
	c.fileText = text
	c.FileLoaded = true
	return source, nil
}

type dbTarget struct{ p *location.Spec }

func (t dbTarget) set(raw any) error {
	s, ok := raw.(string)
	if !ok {
		return fmt.Errorf("want a path, got %v", raw)
	}
	if s == "" {
		return errors.New("no database path (set --db, DSH_DB or db in the config file)")
	}
	spec, err := location.ParseDB(s)
	if err != nil {
		return err
	}
	*t.p = spec
	return nil
}

// value is what `dsh config` prints: a database URL's password is never shown.
func (t dbTarget) value() any { return t.p.String() }

type formatTarget struct{ p *string }

func (t formatTarget) set(raw any) error {
	s, ok := raw.(string)
	if !ok {
		return fmt.Errorf("want a format name, got %v", raw)
	}
	if s != "" {
		if _, err := render.ParseFormat(s, allFormats...); err != nil {
			return err
		}
	}
	*t.p = s
	return nil
}

func (t formatTarget) value() any { return *t.p }

type profileTarget struct{ p *dshcompat.Profile }

func (t profileTarget) set(raw any) error {
	s, ok := raw.(string)
	if !ok {
		return fmt.Errorf("want a profile name, got %v", raw)
	}
	p, err := dshcompat.Parse(s)
	if err != nil {
		return err
	}
	*t.p = p
	return nil
}

func (t profileTarget) value() any { return string(*t.p) }

type boolTarget struct{ p *bool }

func (t boolTarget) set(raw any) error {
	switch x := raw.(type) {
	case bool:
		*t.p = x
	case string:
		b, err := strconv.ParseBool(x)
		if err != nil {
			return fmt.Errorf("%q is not a boolean (true or false)", x)
		}
		*t.p = b
	default:
		return fmt.Errorf("%v is not a boolean (true or false)", raw)
	}
	return nil
}

func (t boolTarget) value() any { return *t.p }

type intTarget struct {
	p   *int
	min int
}

func (t intTarget) set(raw any) error {
	n, err := toInt(raw)
	if err != nil {
		return err
	}
	if n < int64(t.min) {
		return fmt.Errorf("%d is below the minimum %d", n, t.min)
	}
	if n > math.MaxInt32 {
		return fmt.Errorf("%d is too large", n)
	}
	*t.p = int(n)
	return nil
}

func (t intTarget) value() any { return *t.p }

// msTarget is a duration configured in whole milliseconds.
type msTarget struct {
	p   *time.Duration
	min int64
}

func (t msTarget) set(raw any) error {
	n, err := toInt(raw)
	if err != nil {
		return err
	}
	if n < t.min {
		return fmt.Errorf("%d is below the minimum %d", n, t.min)
	}
	if n > math.MaxInt64/int64(time.Millisecond) {
		return fmt.Errorf("%d milliseconds is too long", n)
	}
	*t.p = time.Duration(n) * time.Millisecond
	return nil
}

func (t msTarget) value() any { return t.p.Milliseconds() }

// toInt accepts what each layer produces for a number: a string (flag,
// environment, quoted YAML) or a YAML integer. Fractions are refused rather
// than truncated.
func toInt(raw any) (int64, error) {
	switch x := raw.(type) {
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case uint64:
		if x > math.MaxInt64 {
			return 0, fmt.Errorf("%d is too large", x)
		}
		return int64(x), nil
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, fmt.Errorf("%v is not a whole number", x)
		}
		return int64(x), nil
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a whole number", x)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%v is not a whole number", raw)
}
