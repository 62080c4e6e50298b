package cli

import (
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"time"
)

// nodeInfo is what the node's HTTP pages show about it (*server.Server).
type nodeInfo interface {
	NodeID() uint64
	ClusterID() string
	RPCAddr() string
	Masters() map[uint64]string
}

// newHTTPMux builds the node's HTTP handlers. This is the one place to hook
// more in: the web UI replaces the placeholder line with
// `webui.Register(mux, src)`.
func newHTTPMux(n nodeInfo) *http.ServeMux {
	mux := http.NewServeMux()
	registerPprof(mux)
	registerPlaceholder(mux, n)
	return mux
}

// serveHTTP serves the node's HTTP handlers on l until Shutdown.
func serveHTTP(l net.Listener, n nodeInfo, log *slog.Logger) *http.Server {
	hs := &http.Server{Handler: newHTTPMux(n), ReadHeaderTimeout: 10 * time.Second}
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

var placeholderPage = template.Must(template.New("node").Parse(`<!doctype html>
<html><head><title>ShaleDB node {{.NodeID}}</title></head><body>
<h1>ShaleDB node {{.NodeID}}</h1>
<table>
<tr><th align="left">cluster</th><td>{{.ClusterID}}</td></tr>
<tr><th align="left">rpc</th><td>{{.RPCAddr}}</td></tr>
</table>
<h2>Masters</h2>
<ul>{{range .Masters}}<li>node {{.ID}}: {{.Addr}}</li>{{end}}</ul>
<p><a href="/debug/pprof/">/debug/pprof</a></p>
</body></html>
`))

type masterEntry struct {
	ID   uint64
	Addr string
}

// registerPlaceholder serves a minimal page at / until the web UI exists.
func registerPlaceholder(mux *http.ServeMux, n nodeInfo) {
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		var ms []masterEntry
		for id, a := range n.Masters() {
			ms = append(ms, masterEntry{id, a})
		}
		sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		err := placeholderPage.Execute(w, struct {
			NodeID    uint64
			ClusterID string
			RPCAddr   string
			Masters   []masterEntry
		}{n.NodeID(), n.ClusterID(), n.RPCAddr(), ms})
		if err != nil {
			http.Error(w, fmt.Sprint(err), http.StatusInternalServerError)
		}
	})
}
