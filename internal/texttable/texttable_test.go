package texttable

import "testing"

func TestFormat(t *testing.T) {
	rows := [][]string{{"metric", "a", "run b"}, {"downtime (ms)", "1200", "80"}, {"état", "7", "x"}}
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"default", Options{}, "metric            a  run b\ndowntime (ms)  1200     80\nétat              7      x\n"},
		{"indent, last left", Options{Indent: "  ", LastLeft: true}, "  metric            a  run b\n  downtime (ms)  1200  80\n  état              7  x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Format(rows, tc.o); got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}
