package redis

import (
	"io"
	"os"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// TestMain silences go-redis's process-wide logger, which would print every
// refused dial of the fault tests.
func TestMain(m *testing.M) {
	goredis.SetLogger(LogWriter{W: io.Discard})
	os.Exit(m.Run())
}
