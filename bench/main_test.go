package main

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/seoetl/etl/internal/pgtest"
)

// TestMain is the bench binary's modes too: the P1 process and the rss
// wrapper start the test binary (os.Executable) in them.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case rssMode:
			code, err := rssMain(context.Background(), os.Args[2:], os.Stdin, os.Stdout, os.Stderr)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
			os.Exit(code)
		case childMode:
			if err := childMain(context.Background(), os.Args[2:], os.Stdout, os.Stderr); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	pgtest.Main(m)
}
