package jsjson

import "testing"

// The object reader on the shapes the hot readers meet: an event line, the
// message inside it, a content block, and a subagent view as ParseObject
// reads it when it is not in dsh's own form.
var benchObjects = []struct {
	name string
	raw  []byte
}{
	{"event", []byte(`{"type":"message/assistant","seq":12,"time":1700000000123,"data":{"message":{"id":"m-12","role":"assistant","source":{"kind":"model","provider":"echo","model":"echo-1"},"content":[{"type":"text","text":"Summarised the document in three paragraphs."}]}}}`)},
	{"message", []byte(`{"id":"m-12","role":"assistant","source":{"kind":"model","provider":"echo","model":"echo-1"},"content":[{"type":"text","text":"Summarised the document in three paragraphs."}]}`)},
	{"block", []byte(`{"type":"text","text":"Summarised the document in three paragraphs."}`)},
	{"view", []byte(`{"mode": "continuable", "label": "summarize the doc", "seq": 42}`)},
}

func BenchmarkSplitObject(b *testing.B) {
	for _, in := range benchObjects {
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if o, ok := SplitObject(in.raw); !ok || len(o) == 0 {
					b.Fatal("not split")
				}
			}
		})
	}
}

func BenchmarkParseObject(b *testing.B) {
	for _, in := range benchObjects {
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if o, err := ParseObject(in.raw); err != nil || len(o) == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPath is the lookup session's checks make into an event's data:
// no members are split out on the way.
func BenchmarkPath(b *testing.B) {
	raw := benchObjects[0].raw
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := Path(raw, "data", "message"); !ok {
			b.Fatal("no message")
		}
	}
}
