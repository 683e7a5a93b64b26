package dashboard

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/screenshot"
)

// chart is a stacked bar chart of daily usage, drawn as SVG by the
// template (no chart library, no inline style: presentation attributes and
// classes only).
type chart struct {
	Width, Height int
	Bars          []bar
	Max           int64
	First, Last   string
	AxisY         int
}

type bar struct {
	X, W     int
	Segments []segment
	Label    string // for the tooltip
}

type segment struct {
	Y, H  int
	Class string
}

const (
	chartW, chartH, chartTop, chartBottom = 720, 220, 10, 24
)

func newChart(days []account.Day) chart {
	c := chart{Width: chartW, Height: chartH, AxisY: chartH - chartBottom}
	for _, d := range days {
		c.Max = max(c.Max, d.Succeeded+d.CacheHits+d.Failed+d.Refused)
	}
	if len(days) == 0 {
		return c
	}
	c.First, c.Last = days[0].Date, days[len(days)-1].Date
	plot := float64(chartH - chartTop - chartBottom)
	slot := chartW / len(days)
	for i, d := range days {
		b := bar{X: i*slot + 2, W: max(slot-4, 1),
			Label: fmt.Sprintf("%s: %d rendered, %d cache hits, %d failed, %d refused", d.Date, d.Succeeded, d.CacheHits, d.Failed, d.Refused)}
		y := chartH - chartBottom
		for _, s := range []struct {
			n     int64
			class string
		}{{d.Succeeded, "ok"}, {d.CacheHits, "hit"}, {d.Failed, "fail"}, {d.Refused, "refused"}} {
			if s.n == 0 || c.Max == 0 {
				continue
			}
			h := max(int(float64(s.n)/float64(c.Max)*plot+0.5), 1)
			y -= h
			b.Segments = append(b.Segments, segment{Y: y, H: h, Class: s.class})
		}
		c.Bars = append(c.Bars, b)
	}
	return c
}

type usageData struct {
	Keys   []*screenshot.Key
	KeyID  string
	Days   []account.Day
	Chart  chart
	Totals account.Day
}

// visibleKeys are the keys the visitor may see, and the one picked (all
// when "").
func (d *Dashboard) visibleKeys(v *visit, picked string) ([]*screenshot.Key, []*screenshot.Key, error) {
	all, err := d.Accounts.Keys.ListKeys(v.r.Context())
	if err != nil {
		return nil, nil, err
	}
	var visible, chosen []*screenshot.Key
	for _, k := range all {
		if !account.CanSee(v.user, k) {
			continue
		}
		visible = append(visible, k)
		if picked == "" || k.ID == picked {
			chosen = append(chosen, k)
		}
	}
	if picked != "" && len(chosen) == 0 {
		return nil, nil, screenshot.Errorf(screenshot.ENOTFOUND, "no key with id %s", picked)
	}
	return visible, chosen, nil
}

// usagePage is the last 30 days of one key or of all, as a chart and a
// table.
func (d *Dashboard) usagePage(v *visit) error {
	picked := v.r.URL.Query().Get("key")
	visible, chosen, err := d.visibleKeys(v, picked)
	if err != nil {
		return err
	}
	to := time.Now().UTC().Truncate(24 * time.Hour)
	from := to.AddDate(0, 0, -29)
	sum := map[string]*account.Day{}
	days := make([]account.Day, 0, 30)
	for t := from; !t.After(to); t = t.AddDate(0, 0, 1) {
		days = append(days, account.Day{Date: t.Format(time.DateOnly)})
	}
	for i := range days {
		sum[days[i].Date] = &days[i]
	}
	var total account.Day
	for _, k := range chosen {
		stored, err := d.Accounts.Store.UsageDays(v.r.Context(), k.ID, from.Format(time.DateOnly), to.Format(time.DateOnly))
		if err != nil {
			return err
		}
		for _, s := range stored {
			if d := sum[s.Date]; d != nil {
				d.Succeeded += s.Succeeded
				d.Failed += s.Failed
				d.CacheHits += s.CacheHits
				d.Refused += s.Refused
				d.Bytes += s.Bytes
			}
			total.Succeeded += s.Succeeded
			total.Failed += s.Failed
			total.CacheHits += s.CacheHits
			total.Refused += s.Refused
			total.Bytes += s.Bytes
		}
	}
	return d.render(v, "usage", page{Title: "Usage", Nav: "usage",
		Data: usageData{Keys: visible, KeyID: picked, Days: days, Chart: newChart(days), Totals: total}})
}

type requestRow struct {
	account.Request
	KeyName string
	KeyID   string
}

type requestsData struct {
	Keys     []*screenshot.Key
	KeyID    string
	Status   string
	Requests []requestRow
}

// requestsPage is the recent-requests log, filtered by key and status.
func (d *Dashboard) requestsPage(v *visit) error {
	q := v.r.URL.Query()
	picked, statusText := q.Get("key"), q.Get("status")
	status := 0
	if statusText != "" {
		n, err := strconv.Atoi(statusText)
		if err != nil || n < 100 || n > 599 {
			return screenshot.Errorf(screenshot.EINVALID, "status: an HTTP status such as 200 or 403")
		}
		status = n
	}
	visible, chosen, err := d.visibleKeys(v, picked)
	if err != nil {
		return err
	}
	var rows []requestRow
	for _, k := range chosen {
		reqs, err := d.Accounts.Store.Requests(v.r.Context(), k.ID, 100, status)
		if err != nil {
			return err
		}
		for _, r := range reqs {
			rows = append(rows, requestRow{Request: r, KeyName: k.Name, KeyID: k.ID})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].At.After(rows[j].At) })
	if len(rows) > 100 {
		rows = rows[:100]
	}
	return d.render(v, "requests", page{Title: "Requests", Nav: "requests",
		Data: requestsData{Keys: visible, KeyID: picked, Status: statusText, Requests: rows}})
}
