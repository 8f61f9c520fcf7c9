"""audiopd.eval"""
