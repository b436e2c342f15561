"""Brute-force twins of kanon's algorithms: slow, obviously correct definitions the tests compare against.

They live with the tests, not in ``kanon_core``, so production code cannot come to depend on them.
"""
