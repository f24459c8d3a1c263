"""A consultation's journal: the steps and events a run leaves behind, in order and numbered
(store, lease, numbering), the board folded from those events, its one selector, its
renderer and the thread that broadcasts it."""
