package queue

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestSlotsAndCounters(t *testing.T) {
	q := New(2, 1, 100*time.Millisecond)
	r1, err1 := q.Acquire(context.Background())
	r2, err2 := q.Acquire(context.Background())
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	// A third waits and times out; a fourth, while the third waits, is turned away.
	var wg sync.WaitGroup
	wg.Add(1)
	var err3 error
	go func() {
		defer wg.Done()
		_, err3 = q.Acquire(context.Background())
	}()
	for q.Stats().Waiting == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := q.Acquire(context.Background()); !errors.Is(err, ErrFull) {
		t.Errorf("fourth: %v, want ErrFull", err)
	}
	wg.Wait()
	if !errors.Is(err3, ErrTimeout) {
		t.Errorf("third: %v, want ErrTimeout", err3)
	}
	r1(true)
	r1(true) // a second release is ignored
	r2(false)
	st := q.Stats()
	if st.Active != 0 || st.Waiting != 0 || st.Completed != 1 || st.Failed != 1 || st.Rejected != 2 || st.Slots != 2 {
		t.Errorf("stats = %+v", st)
	}
}

func TestFIFO(t *testing.T) {
	q := New(1, 10, time.Second)
	hold, _ := q.Acquire(context.Background())
	order := make(chan int, 3)
	for i := range 3 {
		go func() {
			r, err := q.Acquire(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			r(true)
		}()
		for q.Stats().Waiting != int64(i+1) {
			time.Sleep(time.Millisecond)
		}
	}
	hold(true)
	for want := range 3 {
		if got := <-order; got != want {
			t.Fatalf("served %d, want %d (first come, first served)", got, want)
		}
	}
}

func TestCanceledWhileWaiting(t *testing.T) {
	q := New(1, 10, time.Minute)
	hold, _ := q.Acquire(context.Background())
	defer hold(true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := q.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}
