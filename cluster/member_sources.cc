// Placeholder; implemented in its change.
