// Anchors the precompiled header target; holds no code.
