package webui

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/metrics"
	pb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// Source is what the UI reads of the node serving it; server.Server
// implements it.
type Source interface {
	NodeID() uint64
	ClusterID() string
	RPCAddr() string
	// TabletStatuses reports the tablet replicas hosted on this node.
	TabletStatuses() []*pb.TabletStatus
	// MasterClient calls the master leader, for cluster-wide pages.
	MasterClient() *client.Masters
	// Metrics is the node's metrics registry, served on /metrics.
	Metrics() *metrics.Registry
}

// Timeout bounds the master calls of one page.
const Timeout = 5 * time.Second

//go:embed templates/*.html
var templateFS embed.FS

// Register adds the UI's pages to mux (see the package documentation).
func Register(mux *http.ServeMux, src Source) {
	u := &ui{src: src, pages: map[string]*template.Template{}}
	for _, name := range []string{"overview", "masters", "tservers", "tables", "table", "tablets"} {
		u.pages[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}
	mux.HandleFunc("GET /{$}", u.handle("overview", "Overview", u.overview))
	mux.HandleFunc("GET /masters", u.handle("masters", "Masters", u.masters))
	mux.HandleFunc("GET /tservers", u.handle("tservers", "Tablet servers", u.tservers))
	mux.HandleFunc("GET /tables", u.handle("tables", "Tables", u.tables))
	mux.HandleFunc("GET /tables/{id}", u.handle("table", "Table", u.table))
	mux.HandleFunc("GET /tablets", u.handle("tablets", "Tablets on this node", u.tablets))
	mux.Handle("GET /metrics", src.Metrics().Handler())
}

type ui struct {
	src   Source
	pages map[string]*template.Template
}

// httpError is an error with the HTTP status to answer it with.
type httpError struct {
	status int
	err    error
}

func (e *httpError) Error() string { return e.err.Error() }
func (e *httpError) Unwrap() error { return e.err }

// page is what the layout template renders.
type page struct {
	Title string
	Node  Node
	Now   time.Time
	Data  any
	Err   string
}

func (u *ui) node() Node {
	return Node{NodeID: u.src.NodeID(), ClusterID: u.src.ClusterID(), RPCAddr: u.src.RPCAddr()}
}

func (u *ui) handle(name, title string, build func(ctx context.Context, r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), Timeout)
		defer cancel()
		data, err := build(ctx, r)
		status := http.StatusOK
		if err != nil {
			status = http.StatusBadGateway
			var he *httpError
			if errors.As(err, &he) {
				status = he.status
			}
		}
		if r.URL.Query().Get("format") == "json" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			if err != nil {
				_ = enc.Encode(map[string]string{"error": err.Error()})
				return
			}
			_ = enc.Encode(data)
			return
		}
		p := page{Title: title, Node: u.node(), Now: time.Now(), Data: data}
		if err != nil {
			p.Err = err.Error()
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_ = u.pages[name].ExecuteTemplate(w, "layout", p)
	}
}

// call runs one master RPC at the master leader.
func call[R interface{ GetError() *masterpb.MasterError }](ctx context.Context, ms *client.Masters, f func(ctx context.Context, mc masterpb.MasterClient) (R, error)) (R, error) {
	var out R
	err := ms.Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := f(ctx, mc)
		out = r
		return r.GetError(), err
	})
	if client.IsCode(err, masterpb.MasterError_NOT_FOUND) {
		err = &httpError{status: http.StatusNotFound, err: err}
	}
	return out, err
}

func (u *ui) listMasters(ctx context.Context, ms *client.Masters) ([]Master, error) {
	r, err := call(ctx, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.ListMastersResponse, error) {
		return mc.ListMasters(ctx, &masterpb.ListMastersRequest{})
	})
	if err != nil {
		return nil, err
	}
	out := []Master{}
	for _, m := range r.GetMasters() {
		out = append(out, Master{NodeID: m.GetNodeId(), RPCAddr: m.GetRpcAddr(), HTTPAddr: m.GetHttpAddr(), Leader: m.GetIsLeader()})
	}
	return out, nil
}

func (u *ui) listTServers(ctx context.Context, ms *client.Masters) ([]TServer, error) {
	r, err := call(ctx, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.ListTServersResponse, error) {
		return mc.ListTServers(ctx, &masterpb.ListTServersRequest{})
	})
	if err != nil {
		return nil, err
	}
	out := []TServer{}
	for _, t := range r.GetTservers() {
		ts := TServer{NodeID: t.GetNodeId(), RPCAddr: t.GetRpcAddr(), HTTPAddr: t.GetHttpAddr(), Placement: placement(t.GetPlacement()),
			State: t.GetState().String(), Blacklisted: t.GetBlacklisted(), Tablets: t.GetTablets(), Leaders: t.GetLeaders(),
			DataBytes: t.GetDataBytes()}
		if ms := t.GetLastHeartbeatUnixMs(); ms > 0 {
			ts.LastHeartbeat = time.UnixMilli(ms)
		}
		out = append(out, ts)
	}
	return out, nil
}

func (u *ui) listTables(ctx context.Context, ms *client.Masters) ([]*masterpb.TableInfo, error) {
	r, err := call(ctx, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.ListTablesResponse, error) {
		return mc.ListTables(ctx, &masterpb.ListTablesRequest{})
	})
	return r.GetTables(), err
}

func (u *ui) getTable(ctx context.Context, ms *client.Masters, id uint32) (*masterpb.GetTableResponse, error) {
	return call(ctx, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.GetTableResponse, error) {
		return mc.GetTable(ctx, &masterpb.GetTableRequest{TableId: id})
	})
}

func (u *ui) overview(ctx context.Context, _ *http.Request) (any, error) {
	ms := u.src.MasterClient()
	o := Overview{Node: u.node(), LocalTablets: len(u.src.TabletStatuses())}
	masters, err := u.listMasters(ctx, ms)
	if err != nil {
		return o, err
	}
	o.Masters = len(masters)
	for i := range masters {
		if masters[i].Leader {
			o.MasterLeader = &masters[i]
		}
	}
	tss, err := u.listTServers(ctx, ms)
	if err != nil {
		return o, err
	}
	for _, t := range tss {
		if t.State == masterpb.TServerInfo_LIVE.String() {
			o.TServersLive++
		} else {
			o.TServersDead++
		}
		o.TabletReplicas += uint64(t.Tablets)
		o.TabletLeaders += uint64(t.Leaders)
		o.DataBytes += t.DataBytes
	}
	tables, err := u.listTables(ctx, ms)
	o.Tables = len(tables)
	return o, err
}

func (u *ui) masters(ctx context.Context, _ *http.Request) (any, error) {
	return u.listMasters(ctx, u.src.MasterClient())
}

func (u *ui) tservers(ctx context.Context, _ *http.Request) (any, error) {
	return u.listTServers(ctx, u.src.MasterClient())
}

func (u *ui) tables(ctx context.Context, _ *http.Request) (any, error) {
	ms := u.src.MasterClient()
	infos, err := u.listTables(ctx, ms)
	if err != nil {
		return nil, err
	}
	out := []Table{}
	for _, t := range infos {
		// The tablet count comes from the table's current tablets (splits
		// change it), one GetTable per table.
		r, err := u.getTable(ctx, ms, t.GetTableId())
		if err != nil {
			var he *httpError
			if !errors.As(err, &he) {
				return out, err
			}
			continue // dropped meanwhile
		}
		out = append(out, tableOf(t, len(r.GetTablets())))
	}
	return out, nil
}

func (u *ui) table(ctx context.Context, r *http.Request) (any, error) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 32)
	if err != nil {
		return nil, &httpError{status: http.StatusBadRequest, err: fmt.Errorf("bad table id %q", r.PathValue("id"))}
	}
	resp, err := u.getTable(ctx, u.src.MasterClient(), uint32(id))
	if err != nil {
		return nil, err
	}
	d := TableDetail{Table: tableOf(resp.GetTable(), len(resp.GetTablets())), Columns: []Column{}, TabletList: []TabletAt{}}
	for _, c := range resp.GetTable().GetSchema().GetColumns() {
		col := Column{ID: c.GetId(), Name: c.GetName(), Type: c.GetType()}
		switch {
		case c.GetIsHashKey():
			col.Key = "hash"
		case c.GetIsRangeKey():
			col.Key = "range"
		}
		d.Columns = append(d.Columns, col)
	}
	for _, loc := range resp.GetTablets() {
		d.TabletList = append(d.TabletList, tabletAt(loc))
	}
	return d, nil
}

func (u *ui) tablets(context.Context, *http.Request) (any, error) {
	out := []LocalTablet{}
	for _, st := range u.src.TabletStatuses() {
		out = append(out, localTablet(st))
	}
	return out, nil
}

var funcs = template.FuncMap{
	"bytes": humanBytes,
	"ago": func(now, t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return now.Sub(t).Round(time.Millisecond).String() + " ago"
	},
	"ids": func(ids []uint64) string {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = strconv.FormatUint(id, 10)
		}
		return strings.Join(s, ", ")
	},
	// link makes an http(s) URL of a node's advertised HTTP address, or ""
	// (html/template still filters the URL when it is used in href).
	"link": func(addr string) string {
		if addr == "" {
			return ""
		}
		return "http://" + addr + "/"
	},
}

func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
