package builtins

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"hash"
	"sync"
	"time"

	"github.com/shaledb/shaledb/internal/ysql/types"
)

// The functions of PostgreSQL's uuid-ossp extension, built in (YugabyteDB
// ships the extension; CREATE EXTENSION "uuid-ossp" is a no-op here).

// The namespace UUIDs of RFC 4122 (uuid_ns_dns() and the others).
var uuidNamespaces = map[string][16]byte{
	"uuid_ns_dns":  {0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8},
	"uuid_ns_url":  {0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8},
	"uuid_ns_oid":  {0x6b, 0xa7, 0xb8, 0x12, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8},
	"uuid_ns_x500": {0x6b, 0xa7, 0xb8, 0x14, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8},
}

// v1State is the clock sequence and last timestamp of version 1 UUIDs, so
// that two made in the same 100 ns tick differ.
var v1State struct {
	sync.Mutex
	last  uint64
	seq   uint16
	node  [6]byte
	ready bool
}

// uuidV1 makes a time-based UUID. The node is random with the multicast
// bit set (what uuid_generate_v1mc makes; v1's MAC address is not
// exposed here either, as the node's address says nothing useful).
func uuidV1() ([16]byte, error) {
	var u [16]byte
	v1State.Lock()
	defer v1State.Unlock()
	if !v1State.ready {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return u, err
		}
		copy(v1State.node[:], b[:6])
		v1State.node[0] |= 0x01
		v1State.seq = binary.BigEndian.Uint16(b[6:]) & 0x3fff
		v1State.ready = true
	}
	// 100 ns intervals since 1582-10-15.
	ts := uint64(time.Now().UnixNano()/100) + 0x01b21dd213814000
	if ts <= v1State.last {
		v1State.seq = (v1State.seq + 1) & 0x3fff
	}
	v1State.last = ts
	binary.BigEndian.PutUint32(u[0:], uint32(ts))
	binary.BigEndian.PutUint16(u[4:], uint16(ts>>32))
	binary.BigEndian.PutUint16(u[6:], uint16(ts>>48)&0x0fff|0x1000)
	binary.BigEndian.PutUint16(u[8:], v1State.seq|0x8000)
	copy(u[10:], v1State.node[:])
	return u, nil
}

// uuidHashed is a name-based UUID (v3: MD5, v5: SHA-1) of name in the
// namespace ns.
func uuidHashed(h hash.Hash, version byte, ns [16]byte, name string) [16]byte {
	h.Write(ns[:])
	h.Write([]byte(name))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | version<<4
	u[8] = u[8]&0x3f | 0x80
	return u
}

func uuidOSSP() {
	addFn("uuid_generate_v4", nil, tUUID, functions["gen_random_uuid"][0].Eval).Volatile = true
	v1 := func(_ *EvalContext, _ []types.Datum) (types.Datum, error) {
		u, err := uuidV1()
		if err != nil {
			return types.NullDatum, err
		}
		return types.DUUID(u), nil
	}
	addFn("uuid_generate_v1", nil, tUUID, v1).Volatile = true
	addFn("uuid_generate_v1mc", nil, tUUID, v1).Volatile = true
	addFn("uuid_generate_v3", args(tUUID, tText), tUUID, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return types.DUUID(uuidHashed(md5.New(), 3, a[0].U, a[1].S)), nil
	})
	addFn("uuid_generate_v5", args(tUUID, tText), tUUID, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return types.DUUID(uuidHashed(sha1.New(), 5, a[0].U, a[1].S)), nil
	})
	addFn("uuid_nil", nil, tUUID, func(_ *EvalContext, _ []types.Datum) (types.Datum, error) {
		return types.DUUID([16]byte{}), nil
	})
	for name, ns := range uuidNamespaces {
		addFn(name, nil, tUUID, func(_ *EvalContext, _ []types.Datum) (types.Datum, error) { return types.DUUID(ns), nil })
	}
}
