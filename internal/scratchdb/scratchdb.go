// Package scratchdb gives the demo and the benchmarks databases to play in: on a throwaway
// cluster when no server is named, or as new databases on the server --database-url points at.
// Every database it makes is migrated; the throwaway cluster is removed by Close.
package scratchdb

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/migrate"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/pgcluster"
)

// Server hands out migrated databases.
type Server struct {
	cluster *pgcluster.Cluster
	baseURL string
}

// Open starts a throwaway cluster when serverURL is empty, or uses serverURL's server.
func Open(ctx context.Context, serverURL string) (*Server, error) {
	return open(ctx, serverURL, pgcluster.Start)
}

// OpenDurable is Open with a throwaway cluster that keeps durability on (pgcluster.StartDurable).
func OpenDurable(ctx context.Context, serverURL string) (*Server, error) {
	return open(ctx, serverURL, pgcluster.StartDurable)
}

func open(ctx context.Context, serverURL string, startCluster func(context.Context) (*pgcluster.Cluster, error)) (*Server, error) {
	if serverURL != "" {
		return &Server{baseURL: serverURL}, nil
	}
	c, err := startCluster(ctx)
	if err != nil {
		return nil, err
	}
	return &Server{cluster: c, baseURL: c.URL("postgres")}, nil
}

// Close stops the throwaway cluster, if this Server started one.
func (s *Server) Close() error {
	if s.cluster == nil {
		return nil
	}
	return s.cluster.Stop()
}

// CreateDatabase makes a new migrated database named prefix_<unix nanoseconds> and returns its URL.
func (s *Server) CreateDatabase(ctx context.Context, prefix string) (string, error) {
	name := fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
	conn, err := pgx.Connect(ctx, s.baseURL)
	if err != nil {
		return "", fmt.Errorf("connect to server: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "create database "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(s.baseURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	if _, err := migrate.MigrateURL(ctx, u.String()); err != nil {
		return "", err
	}
	return u.String(), nil
}

// CreateService makes a new migrated database, names its service, and returns a pool on it
// (with streamseal's row types registered). The caller closes the pool.
func (s *Server) CreateService(ctx context.Context, prefix, service string) (*pgxpool.Pool, error) {
	databaseURL, err := s.CreateDatabase(ctx, prefix)
	if err != nil {
		return nil, err
	}
	pool, err := store.Open(ctx, databaseURL)
	if err != nil {
		return nil, err
	}
	if err := store.ServiceNameSet(ctx, pool, service); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}
