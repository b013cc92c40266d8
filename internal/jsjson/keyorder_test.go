package jsjson

import (
	"slices"
	"testing"
)

func TestPropertyOrderPutsArrayIndexesFirst(t *testing.T) {
	got := PropertyOrder([]string{"b", "10", "a", "2", "02", "-1", "4294967294", "4294967295", "1.5"})
	want := []string{"2", "10", "4294967294", "b", "a", "02", "-1", "4294967295", "1.5"}
	if !slices.Equal(got, want) {
		t.Fatalf("PropertyOrder = %v, want %v", got, want)
	}
	plain := []string{"z", "y"}
	if got := PropertyOrder(plain); !slices.Equal(got, plain) {
		t.Fatalf("no index keys: %v", got)
	}
}
