"""The course's furniture: what a notebook needs that is not itself a lesson.

- `labs.classroom.setup`: ``setup()``, the one call at the top of every lesson (seeds,
  threads, determinism, figure defaults; returns ``glue``).
- `labs.classroom.sliders`: ``live_slider``, sliders that also work in the static book.
- `labs.classroom.exercises`: every exercise's answer check, one module per lesson topic;
  `labs.classroom.answers` holds the grading helpers they share.
- `labs.classroom.results`: the real-data experiment's results, as the lessons quote them.
"""
