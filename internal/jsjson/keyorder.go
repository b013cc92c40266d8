package jsjson

import (
	"cmp"
	"slices"
	"strconv"
)

// PropertyOrder reorders distinct keys, given in creation order, the way
// JavaScript enumerates an ordinary object's own keys (Object.keys,
// JSON.stringify): array-index keys first in ascending numeric order, then
// every other key in creation order. DSH reports "the first unknown key"
// in this order, and re-serialised objects follow it.
func PropertyOrder(keys []string) []string {
	var index, named []string
	for _, k := range keys {
		if _, ok := arrayIndex(k); ok {
			index = append(index, k)
		} else {
			named = append(named, k)
		}
	}
	if index == nil {
		return keys
	}
	slices.SortFunc(index, func(a, b string) int {
		x, _ := arrayIndex(a)
		y, _ := arrayIndex(b)
		return cmp.Compare(x, y)
	})
	return append(index, named...)
}

// arrayIndex reports whether key is an ECMAScript array index — the
// canonical decimal form of an integer in [0, 2^32-2] — and its value.
func arrayIndex(key string) (uint64, bool) {
	if key == "" || len(key) > 10 || (len(key) > 1 && key[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < '0' || key[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(key, 10, 64)
	if err != nil || n > 1<<32-2 {
		return 0, false
	}
	return n, true
}
