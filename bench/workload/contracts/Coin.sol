// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;

/// A minimal ERC-20: its Transfer has three topics (the value is not indexed), and is never an NFT.
contract Coin {
    event Transfer(address indexed from, address indexed to, uint256 value);

    mapping(address => uint256) public balanceOf;

    function mint(address to, uint256 amount) external {
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        balanceOf[msg.sender] -= amount;
        balanceOf[to] += amount;
        emit Transfer(msg.sender, to, amount);
        return true;
    }
}
