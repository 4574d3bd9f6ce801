// Package vt is a fake terminal for the tests of what a person sees at
// one: the live progress displays of package progress, and etl run under
// a pseudo-terminal in cmd/etl.
package vt
