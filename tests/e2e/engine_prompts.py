"""Prompts for the in-process engine tests, from the project's model corpus (ids ``dNN-greedy``):
with greedy decoding SmolLM2-135M loops on the first two within ~200 tokens (in llama.cpp and in
transformers alike) and answers the next two and stops. The last answers in a sentence in
llama.cpp (Q4_1, as in the corpus) but loops late in transformers (float32); ``LATE_LOOPS`` are
loops of this project's own prompts that the former token preset (45 copies) let run past a
400-token limit."""

from __future__ import annotations

LOOPING = {
    "d26-greedy": (
        "Create a markdown table of the planets of the solar system with columns for "
        "diameter, number of moons, distance from the Sun and length of a day."
    ),
    "d25-greedy": (
        "Write a Go program that reads a JSON-lines file of bank transactions and prints the "
        "total amount per account, with proper error handling."
    ),
}
CLEAN = {
    "d01-greedy": (
        "You are a calendar assistant with the tools list_events(date), create_event(title, "
        "start, end) and send_invite(email, event_id). Schedule a one-hour design review with"
        " ana@example.com and raj@example.com next Tuesday afternoon, avoiding conflicts. "
        "Show each tool call as 'CALL: ...' and its result as 'RESULT: ...'."
    ),
    "d08-greedy": (
        "You are a hotel-booking agent with the tools find_hotels(city, checkin, checkout), "
        "check_price(hotel_id) and book(hotel_id). Book the cheapest 3-star hotel in Porto "
        "from 12 to 15 May. Print each tool call and its response until the booking is "
        "confirmed."
    ),
}
# In transformers' float32 run the model walks through the git commands, then writes one
# 91-token paragraph over and over until the limit.
PARAGRAPH_LOOP = {
    "d07-greedy": (
        "Play the role of a git assistant. The user has a merge conflict in src/config.js "
        "after merging the branch feature/login into main. Walk through every git command you"
        " run, its output, and how you resolve the conflict."
    ),
}
LATE_LOOPS = {
    # A song's line of 18 tokens, over and over.
    "la-la-song": "Write a children's song with a chorus of la la la.",
}
