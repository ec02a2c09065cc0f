//go:build !race

package measure

// raceEnabled scales down the longest simulations under the race detector.
const raceEnabled = false
