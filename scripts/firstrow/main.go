// Command firstrow runs one query through pgx and prints how many rows it
// returned, when the first arrived and when the last did: the figures of
// docs/benchmarks.md for streamed results.
//
//	go run ./scripts/firstrow 127.0.0.1 "SELECT * FROM big"
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: firstrow HOST QUERY")
		os.Exit(2)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, "postgres://yugabyte@"+os.Args[1]+":5433/yugabyte")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer conn.Close(ctx)
	start := time.Now()
	rows, err := conn.Query(ctx, os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	n := 0
	var first time.Duration
	for rows.Next() {
		if n == 0 {
			first = time.Since(start)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "after %d rows: %v\n", n, err)
		os.Exit(1)
	}
	fmt.Printf("rows %d, first after %v, all after %v\n", n, first.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}
