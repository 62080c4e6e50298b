package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// identity is what a node keeps in its data dir to come back as itself:
// the cluster it belongs to, its node id and the masters it last knew.
type identity struct {
	ClusterID string            `json:"cluster_id"`
	NodeID    uint64            `json:"node_id"`
	Masters   map[uint64]string `json:"masters"`
}

const identityFile = "identity.json"

func loadIdentity(dir string) (*identity, error) {
	b, err := os.ReadFile(filepath.Join(dir, identityFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var id identity
	if err := json.Unmarshal(b, &id); err != nil {
		return nil, fmt.Errorf("server: %s: %w", filepath.Join(dir, identityFile), err)
	}
	if id.ClusterID == "" || id.NodeID == 0 {
		return nil, fmt.Errorf("server: %s: incomplete identity", filepath.Join(dir, identityFile))
	}
	return &id, nil
}

// save writes the identity atomically (temp file, fsync, rename).
func (id *identity) save(dir string) error {
	b, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, identityFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err = f.Write(append(b, '\n')); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, identityFile)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
