package runtime

import (
	"context"
	"reflect"

	"github.com/stateutil/stateutil/keygroup"
)

// message travels on a channel between two subtasks: a batch of records,
// a checkpoint barrier, or the end of the stream.
type message struct {
	records []Record
	barrier int64 // checkpoint id; 0 = none
	end     bool
}

// partitioner picks the downstream channel of a record.
type partitioner func(r *Record) int

// keyBy routes as Flink does: the key group of the key's Java hashCode,
// then the subtask owning that key group.
func keyBy(extract func(Record) string, maxP, p int) partitioner {
	return func(r *Record) int {
		r.Key = extract(*r)
		r.kg = keygroup.OfHash(keygroup.HashString(r.Key), maxP)
		return keygroup.SubtaskOf(r.kg, maxP, p)
	}
}

// rebalance deals records round-robin, starting at the sender's index.
func rebalance(n, start int) partitioner {
	next := start
	return func(*Record) int {
		next = (next + 1) % n
		return next
	}
}

func forward(*Record) int { return 0 }

// output is a subtask's sending side: a buffer per downstream channel,
// flushed when full and before every barrier and the end of the stream.
type output struct {
	ctx   context.Context
	chans []chan message
	bufs  [][]Record
	route partitioner
	batch int
}

func newOutput(ctx context.Context, chans []chan message, route partitioner, batch int) *output {
	return &output{ctx: ctx, chans: chans, bufs: make([][]Record, len(chans)), route: route, batch: batch}
}

// Collect implements Collector.
func (o *output) Collect(r Record) error {
	t := o.route(&r)
	o.bufs[t] = append(o.bufs[t], r)
	if len(o.bufs[t]) >= o.batch {
		return o.flush(t)
	}
	return nil
}

func (o *output) flush(t int) error {
	if len(o.bufs[t]) == 0 {
		return nil
	}
	m := message{records: o.bufs[t]}
	o.bufs[t] = make([]Record, 0, o.batch)
	return o.send(t, m)
}

func (o *output) send(t int, m message) error {
	select {
	case o.chans[t] <- m:
		return nil
	case <-o.ctx.Done():
		return context.Cause(o.ctx)
	}
}

// broadcast flushes every buffer, then sends m on every channel.
func (o *output) broadcast(m message) error {
	for t := range o.chans {
		if err := o.flush(t); err != nil {
			return err
		}
		if err := o.send(t, m); err != nil {
			return err
		}
	}
	return nil
}

// event is what an input gate hands its subtask.
type event struct {
	records []Record
	barrier int64 // aligned barrier: received on every input
	end     bool  // every input ended
}

// inputGate reads a subtask's inputs and aligns barriers: once an input
// delivered barrier n it is not read again until every input has.
type inputGate struct {
	ctx     context.Context
	chans   []chan message
	blocked []bool
	ended   []bool
	waiting int // inputs blocked or ended
	ends    int
	barrier int64
	next    int
	cases   []reflect.SelectCase
	idx     []int
}

func newInputGate(ctx context.Context, chans []chan message) *inputGate {
	return &inputGate{ctx: ctx, chans: chans, blocked: make([]bool, len(chans)), ended: make([]bool, len(chans))}
}

// nextEvent blocks until there are records, an aligned barrier, or the end.
func (g *inputGate) nextEvent() (event, error) {
	for {
		i, m, err := g.receive()
		if err != nil {
			return event{}, err
		}
		switch {
		case m.end:
			g.ended[i] = true
			g.ends++
			g.waiting++
			if g.ends == len(g.chans) {
				return event{end: true}, nil
			}
		case m.barrier != 0:
			g.blocked[i] = true
			g.barrier = m.barrier
			g.waiting++
		default:
			return event{records: m.records}, nil
		}
		if g.barrier != 0 && g.waiting == len(g.chans) {
			b := g.barrier
			g.barrier = 0
			for j := range g.blocked {
				if g.blocked[j] {
					g.blocked[j] = false
					g.waiting--
				}
			}
			return event{barrier: b}, nil
		}
	}
}

// receive takes one message from an input that is neither blocked nor
// ended: without blocking if one is ready, else waiting on all of them.
func (g *inputGate) receive() (int, message, error) {
	n := len(g.chans)
	if n == 1 {
		select {
		case m := <-g.chans[0]:
			return 0, m, nil
		case <-g.ctx.Done():
			return 0, message{}, context.Cause(g.ctx)
		}
	}
	for k := range n {
		i := (g.next + k) % n
		if g.blocked[i] || g.ended[i] {
			continue
		}
		select {
		case m := <-g.chans[i]:
			g.next = i + 1
			return i, m, nil
		default:
		}
	}
	g.cases = append(g.cases[:0], reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(g.ctx.Done())})
	g.idx = g.idx[:0]
	for i, c := range g.chans {
		if !g.blocked[i] && !g.ended[i] {
			g.cases = append(g.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
			g.idx = append(g.idx, i)
		}
	}
	chosen, v, _ := reflect.Select(g.cases)
	if chosen == 0 {
		return 0, message{}, context.Cause(g.ctx)
	}
	i := g.idx[chosen-1]
	g.next = i + 1
	return i, v.Interface().(message), nil
}
