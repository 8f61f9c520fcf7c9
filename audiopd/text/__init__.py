"""audiopd.text"""
