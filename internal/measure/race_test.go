//go:build race

package measure

// raceEnabled scales down the longest simulations under the race detector,
// which slows the histogram log encoding (zlib) by an order of magnitude.
const raceEnabled = true
