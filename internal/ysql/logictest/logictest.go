// Package logictest runs SQL logic-test files against a live YSQL endpoint
// through pgx. A file is a sequence of records separated by blank lines:
//
//	statement ok
//	CREATE TABLE t (a int PRIMARY KEY, b text)
//
//	statement error 23505
//	INSERT INTO t VALUES (1, 'x')
//
//	query rowsort
//	SELECT a, b FROM t
//	----
//	1|x
//
// Query results are compared as text: columns joined by "|", NULL as
// "NULL", one row per line; "rowsort" sorts the rows before comparing
// (for queries without ORDER BY). "statement error CODE [message regexp]"
// expects the SQLSTATE (and a message matching the regexp). "# " starts a
// comment line.
package logictest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Record is one statement or query of a file.
type Record struct {
	Line     int
	Kind     string // "statement" or "query"
	Expect   string // "ok" or "error"
	Code     string
	Message  *regexp.Regexp
	RowSort  bool
	SQL      string
	Expected []string
}

// Parse reads a logic-test file.
func Parse(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var recs []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	var cur *Record
	inResults := false
	flush := func() {
		if cur != nil {
			cur.SQL = strings.TrimSpace(cur.SQL)
			recs = append(recs, *cur)
			cur = nil
		}
		inResults = false
	}
	for sc.Scan() {
		line++
		text := sc.Text()
		switch {
		case cur == nil && (strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#")):
			continue
		case cur == nil:
			fields := strings.Fields(text)
			r := &Record{Line: line, Kind: fields[0]}
			switch fields[0] {
			case "statement":
				if len(fields) < 2 {
					return nil, fmt.Errorf("%s:%d: statement needs ok or error", path, line)
				}
				r.Expect = fields[1]
				if r.Expect == "error" {
					if len(fields) < 3 {
						return nil, fmt.Errorf("%s:%d: statement error needs a SQLSTATE", path, line)
					}
					r.Code = fields[2]
					if len(fields) > 3 {
						re, err := regexp.Compile(strings.Join(fields[3:], " "))
						if err != nil {
							return nil, fmt.Errorf("%s:%d: %v", path, line, err)
						}
						r.Message = re
					}
				} else if r.Expect != "ok" {
					return nil, fmt.Errorf("%s:%d: unknown expectation %q", path, line, r.Expect)
				}
			case "query":
				r.Expect = "ok"
				for _, f := range fields[1:] {
					if f == "rowsort" {
						r.RowSort = true
					}
				}
			default:
				return nil, fmt.Errorf("%s:%d: unknown record %q", path, line, fields[0])
			}
			cur = r
		case strings.TrimSpace(text) == "" && !inResults:
			flush()
		case strings.TrimSpace(text) == "" && inResults:
			flush()
		case text == "----" && cur.Kind == "query":
			inResults = true
		case inResults:
			cur.Expected = append(cur.Expected, text)
		default:
			cur.SQL += text + "\n"
		}
	}
	flush()
	return recs, sc.Err()
}

// Run executes the records on conn and returns the first mismatch.
func Run(ctx context.Context, conn *pgx.Conn, path string, recs []Record) error {
	for _, r := range recs {
		if err := runOne(ctx, conn, r); err != nil {
			return fmt.Errorf("%s:%d: %s\n%w", path, r.Line, r.SQL, err)
		}
	}
	return nil
}

func runOne(ctx context.Context, conn *pgx.Conn, r Record) error {
	if r.Kind == "statement" {
		_, err := conn.Exec(ctx, r.SQL, pgx.QueryExecModeSimpleProtocol)
		return checkErr(r, err)
	}
	rows, err := conn.Query(ctx, r.SQL, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return checkErr(r, err)
	}
	var got []string
	for rows.Next() {
		vals := rows.RawValues()
		parts := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				parts[i] = "NULL"
			} else {
				parts[i] = string(v)
			}
		}
		got = append(got, strings.Join(parts, "|"))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return checkErr(r, err)
	}
	want := append([]string(nil), r.Expected...)
	if r.RowSort {
		sort.Strings(got)
		sort.Strings(want)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		return fmt.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	return nil
}

func checkErr(r Record, err error) error {
	if r.Expect == "ok" {
		if err != nil {
			return fmt.Errorf("unexpected error: %w", err)
		}
		return nil
	}
	if err == nil {
		return fmt.Errorf("expected error %s, got none", r.Code)
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return fmt.Errorf("expected SQLSTATE %s, got %v", r.Code, err)
	}
	if pe.Code != r.Code {
		return fmt.Errorf("expected SQLSTATE %s, got %s: %s", r.Code, pe.Code, pe.Message)
	}
	if r.Message != nil && !r.Message.MatchString(pe.Message) {
		return fmt.Errorf("message %q does not match %q", pe.Message, r.Message)
	}
	return nil
}
