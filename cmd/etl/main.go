// Command etl collects SEO data from the data API into a PostgreSQL
// warehouse. See the README for the sub-commands.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// The first SIGINT/SIGTERM cancels the context: runs finish the pages
	// they are loading and stop. A second one exits at once, which is
	// safe too: a page that did not commit is fetched again on resume.
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "etl: %v: finishing the pages in flight (again to stop at once)\n", s)
		cancel()
		s = <-sigs
		fmt.Fprintf(os.Stderr, "etl: %v: stopping now\n", s)
		os.Exit(130)
	}()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	cancel()
	os.Exit(code)
}
