package blocking

import (
	"context"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/testenv"
)

// rss is this process's resident memory from /proc, in bytes.
func rss() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkEasyList loads EasyList and EasyPrivacy as Debian ships them and
// reports the load time, the memory the engines take (Go heap and process
// RSS, after a collection), the stylesheet's size, and the match time of a
// request against both lists.
func BenchmarkEasyList(b *testing.B) {
	dir := testenv.EasyList(b)
	cfg := Config{Lists: map[Category][]string{Ads: {dir + "/easylist.txt"}, Trackers: {dir + "/easyprivacy.txt"}}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rssBefore := rss()
	start := time.Now()
	f, err := New(context.Background(), cfg, log)
	if err != nil {
		b.Fatal(err)
	}
	load := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	urls := []string{"https://cdn.news.example/app.js", "https://pagead2.googlesyndication.com/pagead/js/adsbygoogle.js",
		"https://www.google-analytics.com/analytics.js", "https://news.example/img/photo.jpg"}
	i := 0
	for b.Loop() {
		f.Block([]Category{Ads, Trackers}, urls[i%len(urls)], "https://news.example/", "script", false)
		i++
	}
	// Reported after the loop, which resets what came before it.
	b.ReportMetric(float64(load.Milliseconds()), "load-ms")
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "heap-MiB")
	b.ReportMetric(float64(rss()-rssBefore)/(1<<20), "rss-MiB")
	b.ReportMetric(float64(len(f.Stylesheet([]Category{Ads, Trackers}, "news.example")))/1024, "css-KiB")
	st := f.Stats()
	b.ReportMetric(float64(st[Ads].Rules+st[Trackers].Rules), "rules")
	b.ReportMetric(float64(st[Ads].SkippedTotal()+st[Trackers].SkippedTotal()), "skipped")
}

// TestEasyListLoads: the maintained lists load with most rules kept, the
// unusable ones counted, and a refresh swaps the engines while matches go on.
func TestEasyListLoads(t *testing.T) {
	dir := testenv.EasyList(t)
	f, err := New(context.Background(), Config{Lists: map[Category][]string{Ads: {dir + "/easylist.txt"}, Trackers: {dir + "/easyprivacy.txt"}}},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	st := f.Stats()
	for _, c := range []Category{Ads, Trackers} {
		if st[c].Rules < 20000 {
			t.Errorf("%s: %d rules", c, st[c].Rules)
		}
	}
	if st[Ads].Skipped["procedural cosmetic"] == 0 {
		t.Errorf("no procedural rule counted: %v", st[Ads].Skipped)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 2000 {
			if _, ok := f.Block([]Category{Ads}, "https://pagead2.googlesyndication.com/pagead/js/adsbygoogle.js", "https://news.example/", "script", false); !ok {
				t.Error("a match during the refresh missed")
				return
			}
		}
	}()
	if err := f.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-done
}
