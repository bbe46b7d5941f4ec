// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;

/// A plain contract that accounts call: an interaction and nothing else.
contract Guestbook {
    mapping(address => uint256) public visits;

    function sign() external {
        visits[msg.sender] += 1;
    }
}
