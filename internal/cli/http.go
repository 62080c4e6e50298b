package cli

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/shaledb/shaledb/internal/webui"
)

// newHTTPMux builds the node's HTTP handlers: the web UI and /metrics
// (internal/webui) and /debug/pprof.
func newHTTPMux(src webui.Source) *http.ServeMux {
	mux := http.NewServeMux()
	registerPprof(mux)
	webui.Register(mux, src)
	return mux
}

// serveHTTP serves the node's HTTP handlers on l until Shutdown.
func serveHTTP(l net.Listener, src webui.Source, log *slog.Logger) *http.Server {
	hs := &http.Server{Handler: newHTTPMux(src), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	}()
	return hs
}

func registerPprof(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}
