"""audiopd.serve"""
