package tserver_test

import "github.com/shaledb/shaledb/internal/storage"

// storageOpts keeps test engines small: several run at once on CI.
var storageOpts = storage.Options{CacheSize: 16 << 20, MemTableSize: 8 << 20}
