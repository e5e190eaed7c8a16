"""Write the demo conversation used by ``oam demo`` and the examples.

The dialogue below is hand-written (no templates): one person chatting with an
assistant over seven weeks about a work trip to Lisbon in March, their job as a
hydrologist, celiac disease, their dog Moose and a kitchen renovation. Only the
timestamps are computed, deterministically, from each session's start time and the
length of each message.

Run from the repository root::

    python examples/data/make_demo_conversation.py

It writes the same bytes to ``examples/data/demo_conversation.jsonl`` and to the
packaged copy ``oam_core/demo/demo_conversation.jsonl``.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

# Each session: its start time (UTC, naive) and the alternating user/assistant turns.
SESSIONS: list[tuple[str, list[str]]] = [
    (
        "2025-01-08T03:12:00",
        [
            "Hey, I need help getting organized. I just found out my abstract got accepted "
            "for the European Flood Risk Forum in Lisbon, so I'm going to Portugal in March!",
            "Congratulations, that's a big deal! When is the forum, and do you already know "
            "how long you want to stay?",
            "It runs March 13 to 15. I'm thinking of flying out of Portland on the 11th so "
            "I'm not a zombie for my talk, and then staying another week for vacation with Sam.",
            "Arriving a day early is smart when you're giving a talk. Is Sam your partner? "
            "Will they join you for the whole trip or just the vacation part?",
            "Yeah, Sam's my partner. Sam's a nurse on night shifts so getting time off is a "
            "whole thing, but they put in for March 14 through the 23rd.",
            "Then the rough shape is: you fly on the 11th, Sam joins on the 14th, and you "
            "both start the vacation after the forum ends on the 15th. Want me to start a "
            "checklist?",
            "Please. Flights, hotel near the venue, something for the dog, and I have to make "
            "sure the kitchen is done before we leave, which, lol.",
            "Checklist started: 1) flights Portland to Lisbon around March 11, 2) hotel near "
            "the forum venue, 3) care for your dog, 4) kitchen renovation finished before "
            "you leave. What's your dog's name, and what's going on with the kitchen?",
            "His name is Moose. He's a four year old border collie mix with way too much "
            "energy. The kitchen is a full gut renovation, our house is a 1924 bungalow and "
            "the kitchen was basically original.",
            "Moose sounds like a handful in the best way. A full gut on a 1924 kitchen is a "
            "big project. Do you have a contractor and a timeline yet?",
            "Contractor is Dario Ruiz, he did our neighbor's bathroom. He says eight to ten "
            "weeks starting next Monday. So in theory done by mid March.",
            "Eight to ten weeks from Monday January 13 lands somewhere between March 10 and "
            "March 24, so it could overlap with the trip. It's worth asking Dario which "
            "milestones need you on site.",
        ],
    ),
    (
        "2025-01-09T20:05:00",
        [
            "Quick question on my lunch break. How do I write a 12 minute conference talk "
            "without cramming everything in?",
            "Start from the one thing you want people to remember and cut whatever doesn't "
            "support it. What's the talk about?",
            "I'm a hydrologist at the Cascade Valley Water District. The talk is about how we "
            "updated our flood inundation maps for the Tualatin basin using lidar and a 2D "
            "hydraulic model.",
            "Nice topic. For 12 minutes I'd do: the problem (the old maps underestimated "
            "flooding), the method on one slide, two before/after maps, and what changed for "
            "residents. How many slides are you thinking?",
            "My boss Gretchen says no more than ten. She's going to review the deck on "
            "February 20.",
            "Ten is a good ceiling for 12 minutes. Let's aim for a full draft by February 10 "
            "so you have time to rehearse before Gretchen's review.",
            "Ok. The hardest part is explaining the model without losing the policy people "
            "in the room.",
            "Try an analogy: the old model treated the floodplain like a single pipe, the 2D "
            "model treats it like a tabletop where the water spreads out. One picture usually "
            "does more than equations.",
            "Ha, I like the tabletop thing. Gretchen will probably want equations anyway.",
            "Put them on a backup slide. If someone asks, you have them; if nobody does, no "
            "one has to squint at them.",
            "Good call. Back to work, thanks!",
            "Good luck with the afternoon!",
        ],
    ),
    (
        "2025-01-11T04:30:00",
        [
            "Okay, food question for Portugal. I have celiac disease so I can't eat gluten at "
            "all, not even a little cross contamination. How hard is Portugal going to be?",
            "Manageable, but you'll need to be careful. Bread shows up with almost every meal "
            "and most pastries, like pastéis de nata, are made with wheat flour. Grilled "
            "fish, rice dishes and a lot of soups are naturally gluten free, but ask whether "
            "anything is thickened with flour.",
            "Ugh, no pastel de nata is going to hurt. Everyone says it's the thing to eat in "
            "Lisbon.",
            "A few bakeries in Lisbon make gluten-free ones, so it's not hopeless. I'd also "
            "carry a printed celiac card in Portuguese that explains cross-contamination. "
            "Servers tend to take a card more seriously than a spoken request.",
            "Yes please, what would the card say?",
            "Something like: 'Tenho doença celíaca. Não posso comer glúten (trigo, centeio, "
            "cevada), nem alimentos que tenham tocado em pão, farinha ou óleo de fritura "
            "partilhado.' Have a native speaker double-check it.",
            "Perfect. Also for the record I love spicy food and I hate olives, which I realize "
            "is a problem in Portugal.",
            "Olives do turn up on the table as a free snack, but you can just wave them away. "
            "Piri-piri chicken should make you happy, as long as it isn't breaded.",
            "Piri piri chicken, noted. Sam eats everything so they can have my olives.",
            "A fair trade. Should I keep a running list of gluten-free-friendly places as we plan?",
            "Yes, definitely.",
            "Will do. Anything we find goes into the trip notes.",
        ],
    ),
    (
        "2025-01-13T22:48:00",
        [
            "Demo day! Dario's crew ripped out the old kitchen this morning. Moose is losing "
            "his mind with all the noise.",
            "Exciting and chaotic! Can Moose go somewhere quieter on the loud days?",
            "I'm taking him to doggy daycare three days a week, the place is called Wag "
            "Street. He comes home exhausted, which honestly is the dream.",
            "A tired border collie is a happy border collie. How did the demolition go, any "
            "surprises behind the walls?",
            "Yes, a bad one. They found knob and tube wiring in the wall behind where the "
            "fridge was. Dario says the electrician has to rewire that whole run before the "
            "inspection.",
            "Knob-and-tube is common in houses from the 1920s and replacing it is the right "
            "call, even if it hurts. Did Dario give you a cost or a time estimate?",
            "About $3,800 extra and maybe a week. Our budget was $42,000 and we only had "
            "about $2,000 of contingency, so now we're over.",
            "So roughly $1,800 over the original budget. You can usually claw some of that "
            "back on finishes; countertops and backsplash are where people have the most "
            "room to move.",
            "Yeah I was going to ask you about countertops anyway. I want butcher block but "
            "Sam wants quartz.",
            "Butcher block is warmer and cheaper but needs oiling and can scorch; quartz is "
            "low maintenance but pricier. Since you're over budget, butcher block on the "
            "perimeter with a quartz island could be a compromise.",
            "Ooh, Sam might go for that. I'll pitch it tonight.",
            "Good luck with the negotiation!",
        ],
    ),
    (
        "2025-01-15T02:20:00",
        [
            "Sam liked the split countertop idea! Quartz island, butcher block everywhere "
            "else. Okay, now flights. What's the best way to get from Portland to Lisbon?",
            "Great outcome! There's no nonstop from PDX to Lisbon, so you'll connect. The "
            "usual options are through Newark, through Amsterdam on Delta/KLM, or through "
            "London. Do you care more about price or total travel time?",
            "Travel time mostly. And I'd rather not go through London, I had a miserable "
            "missed connection at Heathrow once.",
            "Then Amsterdam is often the smoothest: a nonstop from PDX to Amsterdam, then a "
            "short hop down to Lisbon. Leaving the afternoon of March 11 gets you into Lisbon "
            "around lunchtime on the 12th.",
            "Wait, so if I leave the 11th I land on the 12th? I keep forgetting about the "
            "time change.",
            "Right. On March 11 Lisbon is seven hours ahead of Portland (the US moves its "
            "clocks forward on March 9), and the trip itself takes about 16 hours with the "
            "connection. Landing on the 12th still leaves you a full day before the forum.",
            "Okay, good. The district pays for my flight and three nights of hotel, and I pay "
            "for everything after the conference.",
            "That's a common setup. Keep the conference part and the vacation part on "
            "separate bookings where you can, so the expense report stays clean.",
            "Smart. I'll book the flight through our travel portal tomorrow.",
            "Sounds good. Tell me once it's booked and I'll update the checklist.",
        ],
    ),
    (
        "2025-01-16T23:02:00",
        [
            "Booked! Delta out of PDX on March 11 at 1:40 pm, through Amsterdam, landing in "
            "Lisbon at 12:55 pm on March 12. The return is from Porto on March 23.",
            "Nice, flying home from Porto makes sense if the vacation ends there. Flights are "
            "done on the checklist. Next is the hotel near the forum. Where is it being held?",
            "At a conference center in Belém, near the river. I've read it's a bit out from "
            "the center.",
            "Belém is about 20 minutes west of downtown on the 15E tram. Staying in Belém is "
            "convenient for the forum but quiet at night; staying in Baixa or Chiado means a "
            "short commute but far more restaurants.",
            "I think Chiado. Walking around at night is half the fun.",
            "Chiado is a great choice. For three nights on the district's rate, look at the "
            "smaller boutique hotels. Do you know the nightly cap?",
            "$240 a night. Which should be okay in March?",
            "March is shoulder season, so $240 should get you something nice in Chiado. Book "
            "a refundable rate in case the schedule shifts.",
            "Done, I found a place called Casa das Janelas, $215 a night, refundable. Sam will "
            "meet me there on the 14th.",
            "Perfect, the hotel is covered for March 12 to 15. Does Sam have flights yet?",
            "Not yet, their schedule doesn't come out until next week.",
            "Okay, I'll keep Sam's flight on the list as pending.",
        ],
    ),
    (
        "2025-01-18T17:40:00",
        [
            "Who is going to watch Moose for twelve days while we're gone? That's my real problem.",
            "Twelve days is long for a high-energy dog. The options are a sitter who stays "
            "at your place, a boarding kennel, or a friend. Would he cope in a kennel?",
            "Not really. He gets anxious in loud kennels and stops eating. Plus the house "
            "might still be a construction site.",
            "Then a sitter who takes him into their own home is probably better than someone "
            "staying at yours. Does Wag Street do overnight boarding in a home setting?",
            "They don't, but one of the Wag Street staff, Tasha, does dog sitting on the "
            "side. Moose adores her.",
            "That sounds like the best option, someone he already knows. Ask her soon, since "
            "mid-March is spring break for a lot of schools and sitters get booked up.",
            "Good point, I'll ask her Monday. Anything specific I should give her?",
            "A written sheet: feeding amounts, the vet's contact details, any medication, his "
            "walk routine and his quirks. Does Moose have any special needs?",
            "He takes a chewable for allergies every morning, and he's on a salmon based "
            "kibble because chicken makes him itchy. Also he will eat socks.",
            "Noted: allergy chew every morning, salmon kibble only, no chicken, and keep the "
            "socks out of reach. I'll turn that into a sitter sheet for you.",
            "You're the best. He's asleep on my feet right now like nothing is ever wrong.",
            "That's the border collie off-switch. Enjoy the quiet while it lasts.",
        ],
    ),
    (
        "2025-01-22T05:15:00",
        [
            "Long day. A storm came through last night and the Tualatin was running high, so "
            "I spent all day checking gauge data.",
            "That sounds draining. Did anything actually flood, or was it mostly monitoring?",
            "Mostly monitoring. A couple of low roads in Hillsboro got water over them, "
            "nothing major. Funny enough our new maps predicted exactly those spots.",
            "That's a great story for the Lisbon talk: the new maps validated by a real "
            "storm. A photo of one of those roads would make it concrete.",
            "Oh that's a good idea, I'll ask our field tech if he took pictures.",
            "Write down the date and the gauge reading too, so you can cite it precisely. "
            "How's the kitchen?",
            "The electrician finished the rewire today and it passed the rough-in "
            "inspection! So we're back on schedule, mostly.",
            "Great news. With the electrical signed off, the next steps are usually "
            "insulation, drywall and then cabinets. Do you know when the cabinets arrive?",
            "They're supposed to be delivered February 17. Sage green shaker cabinets, I'm "
            "weirdly emotional about them.",
            "Sage green shaker cabinets with butcher block will look beautiful in a "
            "bungalow. It's fine to be emotional, you've been picturing this for a while.",
            "Like three years. Okay, bed. Night!",
            "Good night, get some rest.",
        ],
    ),
    (
        "2025-01-24T04:02:00",
        [
            "I started Duolingo Portuguese but it's teaching me Brazilian Portuguese. Does "
            "that matter for Lisbon?",
            "A little. European Portuguese sounds quite different, the vowels get swallowed, "
            "and some words change, like 'pequeno-almoço' for breakfast instead of 'café da "
            "manhã'. People will still understand you.",
            "Haha, of course. What phrases do I actually need?",
            "Obrigada (thank you), bom dia, a conta, por favor (the check, please), sem "
            "glúten (without gluten), and 'Fala inglês?' for when you get stuck.",
            "Obrigada because I'm a woman, right? Sam would say obrigado?",
            "Exactly, it agrees with the speaker rather than the listener. Lots of people "
            "just use whichever form feels natural to them.",
            "Sam's nonbinary, they'll probably just say thanks in English and smile.",
            "That works everywhere. A smile and an attempt go a long way.",
            "How do I say I have a dog? Everyone asks about Moose when I show them pictures.",
            "'Tenho um cão.' And if you want to show off: 'O meu cão chama-se Moose', my dog "
            "is called Moose.",
            "O meu cão chama-se Moose. I'm going to say this to every stranger.",
            "As you should.",
        ],
    ),
    (
        "2025-01-27T01:25:00",
        [
            "Question about running. I signed up for the Shamrock Run half marathon before I "
            "knew about Lisbon. It's March 16.",
            "March 16 is the day after the forum ends, so you'll be in Portugal. Unless the "
            "trip changes, you'll have to skip it or defer.",
            "Yeah I figured. Can I transfer the bib?",
            "A lot of races allow a transfer or a deferral for a fee up to some deadline. "
            "Check the Shamrock Run FAQ; if they don't, you could aim your training at a "
            "half in late April or May instead.",
            "There's a half in Eugene on April 27, but that's the day after my sister Leah's "
            "wedding in Denver. Probably not.",
            "Running a half the day after a wedding, with a flight in between, sounds rough. "
            "When exactly is the wedding?",
            "April 26. I'm flying to Denver on the 24th. Leah is making me give a toast and "
            "I'm already nervous.",
            "Two big speeches in two months, the conference talk and the toast. Is there a "
            "race in May you could target instead?",
            "Maybe the one in Vancouver, Washington on May 18. I'll look.",
            "That gives you a good training block after both trips. Want a plan that keeps "
            "your mileage up while you're traveling?",
            "Yes but gentle, I'll be eating my weight in gluten free pastries.",
            "Gentle plan it is: easy runs along the river in Lisbon, one longer run on the "
            "weekend in Porto, and zero guilt.",
        ],
    ),
    (
        "2025-01-30T00:10:00",
        [
            "Went to the stone yard with Sam. We picked a quartz slab for the island called "
            "Calacatta Lumen. It's $2,900 installed.",
            "Pretty choice. With the butcher block perimeter, what does the countertop total "
            "come to?",
            "The walnut butcher block is about $1,400. So $4,300 total for countertops, which "
            "is less than the $6,000 we budgeted for all quartz.",
            "So the split saved $1,700, which almost covers the $1,800 overrun from the "
            "rewiring. You're very close to back on budget.",
            "Right?? Sam was smug about it because the split was technically my idea but "
            "they talked the slab price down.",
            "Sounds like a team win. The next decisions are probably the backsplash and the "
            "lighting. Any thoughts on the backsplash?",
            "I want handmade zellige tile in white. Dario says it's a pain to install because "
            "it's uneven.",
            "Zellige is gorgeous, but the irregular edges take longer to set. Ask Dario for a "
            "separate labor quote, since it can take noticeably more hours than subway tile.",
            "Will do. I also realized I should ask him whether the kitchen will be usable at "
            "all before March 11.",
            "Good idea. Ask specifically whether the sink and fridge will be hooked up, and "
            "whether there'll be dusty work while you're away. That matters for Tasha too if "
            "she stops by the house.",
            "Tasha said yes by the way! She'll take Moose to her place from March 10 to March 23.",
            "Wonderful, that's a huge weight off. Dog sitter is done: Tasha, March 10 to 23, "
            "at her place.",
        ],
    ),
    (
        "2025-02-01T18:20:00",
        [
            "Sam's schedule came out and they got the days off! They booked a flight that "
            "lands in Lisbon on the morning of March 14.",
            "Great! So the forum runs the 13th to the 15th and Sam arrives on the 14th. Will "
            "they explore on their own while you're at the forum?",
            "Yes, Sam wants to go to the Gulbenkian museum and ride the trams everywhere. "
            "Then on the 16th we go to Sintra for the day.",
            "Sintra is a lovely day trip: Pena Palace and Quinta da Regaleira. Go early to "
            "beat the tour buses and buy the Pena tickets ahead of time.",
            "Then on the 17th we take the train to Porto. Is the train easy?",
            "Very. The Alfa Pendular runs from Lisbon Santa Apolónia to Porto Campanhã in "
            "about three hours, and booking a few days ahead is usually cheaper.",
            "And in Porto we want a day in the Douro Valley for wine. Sam is very excited "
            "about port.",
            "A Douro day is great, most tours include a boat ride and visits to two quintas. "
            "Ask about a gluten-free lunch when you book, because tours often include a set "
            "meal.",
            "Good catch, those lunches are always sandwiches.",
            "Exactly. Many tours will swap in a salad or grilled fish if you ask in advance.",
            "Okay I'm starting to feel like this trip is real.",
            "It is! Flights, hotel and dog sitter are done. Still open: somewhere to stay in "
            "Porto, the Douro tour, train tickets and Sintra tickets.",
        ],
    ),
    (
        "2025-02-04T03:45:00",
        [
            "I have six slides done. Gretchen saw them over my shoulder and said 'more maps, "
            "fewer words'.",
            "Classic, and good, feedback. Which slides are the wordiest?",
            "The method slide. It has bullets about the lidar resolution, the mesh size, the "
            "roughness coefficients...",
            "Move the numbers to a backup slide and turn the method slide into a diagram: "
            "lidar, terrain, 2D model, map. Say the details out loud instead of writing them.",
            "That's clean. I got the photos of the flooded roads in Hillsboro from Marcus, "
            "our field tech.",
            "Perfect. Put a photo next to the map's prediction for the same spot. That "
            "side-by-side will probably be the slide people remember.",
            "Okay I have a title now: 'Mapping the Water Before It Arrives'. Too cheesy?",
            "I like it. It's clear and a little poetic, which stands out in a conference program.",
            "Gretchen will say it's cheesy but whatever, she's not the one presenting.",
            "Keep it. You can add a plain subtitle: 'Updating flood inundation maps for the "
            "Tualatin basin with lidar and 2D modeling'.",
            "Perfect, stealing that subtitle word for word.",
            "It's yours!",
        ],
    ),
    (
        "2025-02-06T01:30:00",
        [
            "Bad news. The cabinet company emailed and the sage green cabinets are delayed "
            "until March 3 instead of February 17.",
            "Oh no, a two-week slip. Did Dario say how it affects the schedule?",
            "He says the cabinets take about a week to install, then the countertop "
            "template, then two weeks for fabrication. So realistically the kitchen won't be "
            "done until early April.",
            "So the kitchen won't be finished before the trip. The upside is that the messy "
            "work can happen while you're away and Moose is at Tasha's.",
            "That's true, I hadn't thought of it that way. Dario actually asked if his crew "
            "could keep working while we're gone.",
            "That could be efficient. You'd want to give them a lockbox code, agree in "
            "writing on what gets done, and maybe ask a neighbor to check in. Do you trust "
            "the crew?",
            "Yeah, Dario's been great. Our neighbor Ruth can check in, she's retired and "
            "honestly nosy in a useful way.",
            "A nosy retired neighbor is the best security system there is. So: the crew works "
            "March 11 to 23, Ruth checks in, and Dario sends you photo updates.",
            "Now I'm worried we'll have no kitchen for Leah's wedding prep. She wanted to do "
            "a dinner at our place. No wait, the wedding's in Denver, never mind.",
            "Right, the wedding is in Denver on April 26, so your kitchen doesn't have to "
            "host anything. You're safe.",
            "Okay, I'm calmer. We've been living off a hot plate and a microwave in the "
            "dining room since January 13, I can do it a few more weeks.",
            "You're doing great. Want some easy gluten-free hot plate dinners to get you "
            "through the last stretch?",
        ],
    ),
    (
        "2025-02-07T02:55:00",
        [
            "Yes, hot plate dinner ideas please. Gluten free, spicy, no olives, obviously.",
            "1) Black bean and sweet potato tacos on corn tortillas with chipotle. 2) Coconut "
            "red curry with chickpeas over rice. 3) Fried rice with tamari instead of soy "
            "sauce, plus chili crisp. 4) Shakshuka with harissa.",
            "Wait, why tamari instead of soy sauce?",
            "Most soy sauce is brewed with wheat, so it isn't gluten free. Tamari is usually "
            "made without wheat, but check that the label actually says gluten free.",
            "I knew that and forgot. Celiac brain. Most chili crisp is fine, right?",
            "Many are, but some contain soy sauce, and therefore wheat. Read the ingredients "
            "on the jar you have.",
            "Okay. Sam is on nights this week so I'm cooking for one, plus Moose staring at me.",
            "Moose can stare all he likes, but keep the onion and garlic away from him; "
            "they're toxic to dogs.",
            "He gets a carrot. He thinks carrots are the best thing in the world.",
            "Carrots are a great dog snack: cheap, crunchy, and he feels included.",
            "Making the curry tonight. Thanks!",
            "Enjoy! A squeeze of lime at the end makes a big difference.",
        ],
    ),
    (
        "2025-02-11T00:40:00",
        [
            "Weird day. A recruiter from an engineering consultancy in Seattle reached out "
            "about a flood modeling lead job.",
            "That's flattering! Are you interested, or just curious?",
            "Curious. I like the district, but the consultancy would probably pay 25% more. "
            "Moving would mean leaving Portland though, and we just sank a fortune into the "
            "kitchen.",
            "Those are real tradeoffs. Do they offer remote or hybrid work? Some "
            "consultancies let people live in Portland and go up to Seattle a few days a "
            "month.",
            "Didn't ask yet. Also Gretchen told me last week she wants me to apply for the "
            "senior hydrologist position that opens in April.",
            "So there's an internal path too. A senior title at the district plus a strong "
            "Lisbon talk is a good combination. You could treat the recruiter call as a way "
            "to learn your market value.",
            "That's how I'm leaning. I'll take the call but I'm not planning to move.",
            "Sounds sensible. Want help preparing questions for the call?",
            "Sure, just a few.",
            "Ask about the remote policy, the salary range, what 'lead' means day to day, "
            "how much travel there is, and whether they support conference work like your "
            "Lisbon talk.",
            "Good. The call is Thursday at noon.",
            "Good luck! Let me know how it goes.",
        ],
    ),
    (
        "2025-02-14T02:15:00",
        [
            "Recruiter call was fine. Fully in office in Seattle, so that's a no for me.",
            "That makes the decision easy. Did you at least get a salary number?",
            "Yeah, the range was a lot higher than what I make now. I'm going to use that "
            "when I apply for the senior hydrologist job.",
            "Good strategy; knowing the market helps if the district negotiates. When do "
            "applications open?",
            "April 1. Which is right between Lisbon and the wedding, of course.",
            "Your spring is packed: Lisbon March 11 to 23, the senior application in April, "
            "Denver from April 24 for the wedding. Maybe get the application materials ready "
            "in early March, before you leave.",
            "Yes. Also my slide deck is done! Ten slides exactly, and I sent it to Gretchen early.",
            "Early and within the limit, she'll be pleased. Now rehearse it out loud a few "
            "times and time yourself.",
            "I did once. It was 15 minutes. Whoops.",
            "Very normal for a first run. The intro and the method usually run long. Cut the "
            "intro to one sentence and let the maps do the talking.",
            "Second run was 12:40. Getting there.",
            "That's close. You'll probably speed up a little on the day from nerves anyway.",
        ],
    ),
    (
        "2025-02-16T21:10:00",
        [
            "Moose had his vet checkup today. He's healthy but he's put on three pounds, and "
            "the vet says fewer treats.",
            "Good that he's healthy! Three pounds is noticeable on a border collie mix. Do the "
            "carrots count as treats?",
            "Carrots are fine, it's the peanut butter in his Kong. And Sam sneaks him cheese.",
            "Sam the cheese smuggler. You could fill the Kong with mashed pumpkin or soaked "
            "kibble instead; it still keeps him busy.",
            "Ooh, frozen salmon kibble in the Kong. He'll never know.",
            "He'll absolutely know, but he'll eat it anyway. Make sure Tasha gets the same "
            "rules so he doesn't come back heavier.",
            "Ha, true. I'll add 'no cheese, no matter how sad his eyes are' to the sitter sheet.",
            "Added to the sheet: allergy chew every morning, salmon kibble only, no chicken, "
            "no cheese, carrots are fine, socks out of reach.",
            "The vet also gave him his rabies booster so he's all set for Tasha's.",
            "Great. She'll probably want a copy of his vaccination record, so ask the vet to "
            "email it to you.",
            "Already in my inbox. Look at me being organized.",
            "Very organized. The trip checklist is nearly done.",
        ],
    ),
    (
        "2025-02-20T03:35:00",
        [
            "Okay, let's sort out Porto. We're there March 17 to 23 and Sam wants somewhere "
            "with a view of the river.",
            "Ribeira is right on the Douro, or you could stay across the bridge in Vila Nova "
            "de Gaia, where the port cellars are. Gaia usually has the better view of Porto "
            "itself.",
            "Gaia sounds fun with the port cellars. Budget is around 150 euro a night since "
            "this part is on us.",
            "That's doable in March for a one-bedroom apartment with a view. An apartment "
            "also means a kitchen, which makes gluten-free breakfasts easy.",
            "A kitchen!! Imagine having a kitchen, what a concept.",
            "The irony isn't lost on me. You'll have a working kitchen in Porto before you "
            "have one at home.",
            "Booked an apartment in Gaia for 138 euro a night. The terrace faces the river.",
            "Lovely. Now the Douro tour: a small-group tour with a boat ride, maybe on March "
            "19 or 20 so it's midweek?",
            "March 19. I emailed the tour company about a gluten free lunch and they said "
            "they can do grilled fish with potatoes.",
            "Perfect. So the Porto week is: apartment in Gaia March 17 to 23, Douro tour on "
            "March 19, and the flight home from Porto on the 23rd.",
            "I'm so ready.",
            "Not long now! How is the rehearsing going?",
        ],
    ),
    (
        "2025-02-21T01:05:00",
        [
            "Good, I'm down to 11:50. And Gretchen reviewed the deck today. Her only comment "
            "was that the title is cheesy. Called it.",
            "Ha, you predicted that exactly. Keeping it?",
            "Obviously. She also approved a short version of my abstract for the district "
            "newsletter.",
            "Nice. The talk sounds like it's in great shape. Shall we think about packing?",
            "Yes. What's Lisbon like in March?",
            "Usually mild: highs around 17 to 19°C (low to mid 60s °F), cooler evenings and "
            "some rain. Porto is a bit cooler and wetter. Layers and a proper rain jacket.",
            "And shoes. Everyone says Lisbon's hills and cobblestones destroy your feet.",
            "True, and the polished stone sidewalks get slippery when wet. Bring comfortable "
            "shoes with grip: your running shoes plus one nicer pair for the talk.",
            "Also I'm packing gluten free snacks. Can I bring them through customs?",
            "Packaged snacks like bars and crackers are fine in the EU. Leave meat and dairy "
            "products at home, they aren't allowed in, and fresh fruit is restricted too.",
            "Okay, bars and crackers it is. I'll bring a whole bag.",
            "Smart, especially for the flights. Airline gluten-free meals can be hit or miss, "
            "so request one when you check in but don't count on it.",
        ],
    ),
    (
        "2025-02-25T04:20:00",
        [
            "Drywall is done and the kitchen finally looks like a room again. Dario's crew is "
            "painting next week.",
            "That's a big milestone! What color are the walls going to be?",
            "A warm white, Swiss Coffee. Everyone says it goes with sage green.",
            "It does. It's soft enough that it won't look stark next to the sage. Have you "
            "decided on lighting?",
            "Three brass pendants over the island and LED strips under the cabinets. The "
            "electrician comes back to hang them after the cabinets go in.",
            "Brass with sage green and walnut will look warm, and under-cabinet lights make a "
            "real difference when you're chopping.",
            "I keep standing in the empty room imagining cooking there again. Sam wants to "
            "throw a dinner party once it's done.",
            "A kitchen-warming party! When do you think it'll be ready?",
            "Dario says April 8 now, if the cabinets really do arrive March 3.",
            "So a kitchen-warming in mid-April, between the Lisbon trip and Leah's wedding. "
            "Gluten free, spicy, no olives, of course.",
            "You know me too well.",
            "I've been taking notes!",
        ],
    ),
    (
        "2025-02-28T19:50:00",
        [
            "Can you give me the full trip rundown? I want to send it to Sam and my mom.",
            "Here it is. March 11: you fly Delta from Portland at 1:40 pm via Amsterdam. "
            "March 12: land in Lisbon at 12:55 pm and check in at Casa das Janelas in "
            "Chiado. March 13 to 15: the European Flood Risk Forum in Belém, with Sam landing "
            "on the morning of the 14th. March 16: day trip to Sintra. March 17: train to "
            "Porto, apartment in Vila Nova de Gaia. March 19: Douro Valley tour with a "
            "gluten-free lunch. March 23: fly home from Porto. Moose stays with Tasha from "
            "March 10 to 23.",
            "My mom is going to ask who's watering the plants.",
            "Ruth, presumably? She's already keeping an eye on the house and Dario's crew.",
            "Yes, Ruth. I'll bribe her with chocolates from Portugal.",
            "Gluten-free ones, so you can share. Anything else left on the list?",
            "The train tickets to Porto and the Sintra tickets. I'll do both this weekend.",
            "Good: Pena Palace tickets for the 16th, and the Alfa Pendular from Santa "
            "Apolónia on the 17th. Then you're completely set.",
            "Thanks for helping me with all of this. It's been a lot.",
            "It has been a lot: a conference talk, a gutted kitchen, a plan for Moose and a "
            "two-city trip. You've handled it really well. Boa viagem!",
        ],
    ),
]


def build() -> list[dict[str, str]]:
    """Return the messages with deterministic, increasing ISO-8601 timestamps."""
    messages: list[dict[str, str]] = []
    for start, turns in SESSIONS:
        if len(turns) % 2:
            raise ValueError(f"session starting {start} does not end with the assistant")
        clock = datetime.fromisoformat(start)
        for index, text in enumerate(turns):
            role = "user" if index % 2 == 0 else "assistant"
            # Users type (about 5 characters a second); the assistant answers quickly.
            delay = 20 + len(text) // 5 if role == "user" else 4 + len(text) // 60
            clock += timedelta(seconds=delay)
            messages.append(
                {"role": role, "content": text, "timestamp": clock.isoformat(timespec="seconds")}
            )
    return messages


def main() -> None:
    """Write the conversation to the examples folder and the packaged demo folder."""
    here = Path(__file__).resolve().parent
    root = here.parents[1]
    messages = build()
    text = "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages)
    targets = (here / "demo_conversation.jsonl", root / "oam_core/demo/demo_conversation.jsonl")
    for target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target} ({len(messages)} messages)")


if __name__ == "__main__":
    main()
