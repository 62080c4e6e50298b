// Package version holds the build's version, set at link time.
package version

// Version is overridden with -ldflags "-X github.com/shaledb/shaledb/internal/version.Version=…".
var Version = "0.1.0-dev"
