package vt

import (
	"strings"
	"testing"
)

func TestVT(t *testing.T) {
	t.Parallel()
	v := New(t, 10, 3)
	_, _ = v.Write([]byte("one\ntwo\nthree\nfour\n"))
	require := func(want ...string) {
		t.Helper()
		if got := v.Screen(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("screen %q, want %q", got, want)
		}
	}
	require("three", "four")
	if h := strings.Join(v.history, "|"); h != "one|two" {
		t.Fatalf("history %q", h)
	}
	_, _ = v.Write([]byte("\r\x1b[2A\x1b[Jabcdefghijkl\n"))
	require("abcdefghij", "kl")
	_, _ = v.Write([]byte("\x1b[9A東京x\x1b[K"))
	require("東京x", "kl")
	_, _ = v.Write([]byte("\x1b[1")) // split mid-code and mid-rune
	_, _ = v.Write([]byte("A\xe6"))
	_, _ = v.Write([]byte("\x9d\xb1"))
	require("東京x東", "kl")
	_, _ = v.Write([]byte("\r\n\x1b[J"))
	require("東京x東")
}
