package session

import (
	"encoding/json"
	"fmt"
	"slices"
)

// stateVersion versions the MarshalState encoding; RestoreValidator refuses
// any other so a stored state from a different build is recomputed, not
// misread.
const stateVersion = 1

// validatorState is the persisted fold state. Tool-result nodes keep their
// comparison key (the event data minus the tool output), which is all a
// later tool/result replacement is checked against.
type validatorState struct {
	Version           int              `json:"v"`
	Next              int64            `json:"next"`
	Nodes             []int64          `json:"nodes"`
	ReplaceGeneration int64            `json:"replaceGeneration"`
	ToolResults       []toolResultNode `json:"toolResults,omitempty"`
}

type toolResultNode struct {
	Seq  int64  `json:"seq"`
	Rest string `json:"rest"`
}

// MarshalState returns the validator's fold state as compact JSON.
func (v *Validator) MarshalState() ([]byte, error) {
	st := validatorState{
		Version:           stateVersion,
		Next:              v.next,
		Nodes:             v.nodes,
		ReplaceGeneration: v.replaceGen,
	}
	if st.Nodes == nil {
		st.Nodes = []int64{}
	}
	for _, seq := range v.nodes {
		if rest, ok := v.toolResults[seq]; ok {
			st.ToolResults = append(st.ToolResults, toolResultNode{Seq: seq, Rest: rest})
		}
	}
	return json.Marshal(st)
}

// RestoreValidator rebuilds a validator for the session h describes from a
// MarshalState result. A state that is not self-consistent is an error: the
// caller should then revalidate the log from the start.
func RestoreValidator(h Header, state []byte) (*Validator, error) {
	var st validatorState
	if err := json.Unmarshal(state, &st); err != nil {
		return nil, fmt.Errorf("restore validator state: %w", err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("restore validator state: version %d, want %d", st.Version, stateVersion)
	}
	if st.Next < 0 || st.ReplaceGeneration < 0 {
		return nil, fmt.Errorf("restore validator state: negative next seq or replace generation")
	}
	seen := make(map[int64]bool, len(st.Nodes))
	for _, n := range st.Nodes {
		if n < 0 || n >= st.Next || seen[n] {
			return nil, fmt.Errorf("restore validator state: surface node %d is out of range or repeated", n)
		}
		seen[n] = true
	}
	v := &Validator{
		header:      h,
		rules:       rulesFor(h.Version),
		id:          h.ID,
		next:        st.Next,
		nodes:       slices.Clip(st.Nodes),
		replaceGen:  st.ReplaceGeneration,
		toolResults: make(map[int64]string, len(st.ToolResults)),
	}
	for _, tr := range st.ToolResults {
		if !seen[tr.Seq] || tr.Rest == "" {
			return nil, fmt.Errorf("restore validator state: tool/result node %d is not a surface node", tr.Seq)
		}
		v.toolResults[tr.Seq] = tr.Rest
	}
	return v, nil
}
