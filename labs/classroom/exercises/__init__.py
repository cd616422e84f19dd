"""Every exercise's answer check, one module per lesson topic.

A check takes the reader's answer, prints "Right: ..." or a hint that says how the
answer is wrong (never the answer itself), and returns True or False. The notebooks
import them from here, for example
``from labs.classroom.exercises.infonce import check_best_cell``.
"""
