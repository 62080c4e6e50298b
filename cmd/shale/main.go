// Command shale is the ShaleDB server and its operator tools.
package main

import (
	"os"

	"github.com/shaledb/shaledb/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
